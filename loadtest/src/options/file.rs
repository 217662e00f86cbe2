//! The `--config` file: the command line's options in JSON, and how the two overlay.

use anyhow::{Context, Result};

use super::Cli;

/// The config file: the same options as the command line, with `env` as an object.
pub type FileConfig = Cli;

impl Cli {
    /// These options over `file`'s: an option given here wins, a flag set in either is set.
    pub fn over(self, file: FileConfig) -> Cli {
        macro_rules! over {
            ([$($option:ident),+ $(,)?], [$($flag:ident),+ $(,)?]) => {
                Cli {
                    $($option: self.$option.or(file.$option),)+
                    $($flag: self.$flag || file.$flag,)+
                    env: self.env,
                    env_object: file.env_object,
                }
            };
        }
        over!(
            [
                spawn_cluster,
                kill_node,
                fault,
                fault_at,
                fault_for,
                routers,
                router,
                server,
                port,
                url,
                config,
                users,
                files,
                pages,
                accounts,
                jwt_secret,
                jwt_key,
                jwt_issuer,
                jwt_audience,
                jwt_kid,
                per_account,
                editors,
                edit_rate,
                presence_rate,
                restore_every,
                server_patches_per_s,
                api_key,
                ramp,
                warmup,
                duration,
                label,
                json,
                html,
                profile,
                profile_call_graph,
                workers,
                pin_server,
                pin_generator,
            ],
            [spawn, i_have_permission, storm, drop, verbose]
        )
    }
}

/// Reads the config file named by `--config`, if any.
pub fn load_file(cli: &Cli) -> Result<FileConfig> {
    let Some(path) = &cli.config else {
        return Ok(FileConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --config {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("bad --config {}", path.display()))
}
