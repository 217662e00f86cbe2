//! How the command line and the config file merge into one run's options.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use super::check::check;
use crate::pin::CpuList;

use super::{fault, Cli, FileConfig, Options, Target, DEFAULT_CALL_GRAPH, STORM_RAMP};

/// One thread per CPU the generator may use: pinned to one CPU, a second thread would only
/// add wake-ups between threads that share it.
fn default_workers(pin: Option<&CpuList>) -> usize {
    pin.map_or_else(
        || std::thread::available_parallelism().map_or(2, |n| n.get()),
        |cpus| cpus.count(),
    )
}

/// A config value for the environment: strings as they are, numbers and booleans as written.
fn env_value(value: &serde_json::Value) -> Result<String> {
    Ok(match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        other => bail!("env values must be strings, numbers or booleans, not {other}"),
    })
}

/// The spawned node's settings: the config file's `env` object, then `--env K=V` per key.
fn env(
    object: &BTreeMap<String, serde_json::Value>,
    pairs: &[String],
) -> Result<BTreeMap<String, String>> {
    let mut env = BTreeMap::new();
    for (key, value) in object {
        env.insert(key.clone(), env_value(value)?);
    }
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("--env takes K=V, got {pair:?}");
        };
        if key.is_empty() {
            bail!("--env takes K=V, got {pair:?}");
        }
        env.insert(key.to_string(), value.to_string());
    }
    Ok(env)
}

/// `--jwt-secret` or `--jwt-key`, with the issuer and audience; a spawned node is given the
/// secret, issuer and audience (an `--env` of the same name wins).
fn jwt(g: &Cli, env: &mut BTreeMap<String, String>) -> Result<Option<super::Jwt>> {
    let jwt = match (&g.jwt_secret, &g.jwt_key) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => bail!("give --jwt-secret or --jwt-key, not both"),
        (Some(s), None) if s.len() < 32 => bail!("--jwt-secret must be at least 32 bytes"),
        (secret, key) => super::Jwt {
            secret: secret.clone(),
            key: key.clone(),
            issuer: g
                .jwt_issuer
                .clone()
                .unwrap_or_else(|| "atrium-loadtest".into()),
            audience: g.jwt_audience.clone().unwrap_or_else(|| "atrium".into()),
            kid: g.jwt_kid.clone(),
        },
    };
    let mut set = |k: &str, v: &str| {
        env.entry(k.to_string()).or_insert_with(|| v.to_string());
    };
    set("ATRIUM_APP_TOKEN_ISSUER", &jwt.issuer);
    set("ATRIUM_APP_TOKEN_AUDIENCE", &jwt.audience);
    if let Some(secret) = &jwt.secret {
        set("ATRIUM_APP_TOKEN_HS256_SECRET", secret);
    }
    Ok(Some(jwt))
}

/// A `--pin-*` CPU list, when given.
fn cpus(option: &str, text: Option<&str>) -> Result<Option<CpuList>> {
    text.map(|t| CpuList::parse(option, t)).transpose()
}

/// Where the load goes: one of --spawn, --spawn-cluster N and --url.
fn target(g: &Cli) -> Result<Target> {
    if g.routers.is_some() && g.spawn_cluster.is_none() {
        bail!("--routers needs --spawn-cluster N: only routers this tool starts can be counted");
    }
    Ok(match (g.spawn, &g.url, g.spawn_cluster) {
        (_, _, Some(n)) => {
            if g.spawn || g.url.is_some() {
                bail!("give one of --spawn, --spawn-cluster N or --url");
            }
            if n == 0 || n > 64 {
                bail!("--spawn-cluster must be between 1 and 64, got {n}");
            }
            let routers = g.routers.unwrap_or(1);
            if routers == 0 || routers > 8 {
                bail!("--routers must be between 1 and 8, got {routers}");
            }
            Target::Cluster {
                nodes: n,
                routers,
                server: g.server.clone(),
                router: g.router.clone(),
            }
        }
        (true, Some(_), None) => bail!("give either --spawn or --url, not both"),
        (false, None, None) => bail!(
            "give --spawn (start a scratch node), --spawn-cluster N (nodes behind a router) or \
             --url URL (a running one)"
        ),
        (true, None, None) => Target::Spawn {
            server: g.server.clone(),
            port: g.port.unwrap_or(0),
        },
        (false, Some(url), None) => Target::Url(normalize_url(url)?),
    })
}

/// Merges the command line over the config file over the defaults, and checks the result.
pub fn merge(cli: Cli, file: FileConfig) -> Result<Options> {
    let mut env = env(&file.env_object, &cli.env)?;
    let g = cli.over(file);
    let jwt = jwt(&g, &mut env)?;
    let duration = g.duration.unwrap_or(30.0);
    let fault = fault::given(&g, duration)?;
    let target = target(&g)?;
    let users = g.users.unwrap_or(200);
    let pin_generator = cpus("--pin-generator", g.pin_generator.as_deref())?;
    let options = Options {
        target,
        fault,
        i_have_permission: g.i_have_permission,
        env,
        users,
        files: g.files.unwrap_or(users.div_ceil(10).max(1)),
        pages: g.pages.unwrap_or(2),
        accounts: g.accounts.unwrap_or(10),
        per_account: g.per_account.unwrap_or(10),
        jwt,
        editors: g.editors.unwrap_or(0.1),
        edit_rate: g.edit_rate.unwrap_or(2.0),
        presence_rate: g.presence_rate.unwrap_or(20.0),
        restore_every: g.restore_every.unwrap_or(0.0),
        server_patches_per_s: g.server_patches_per_s.unwrap_or(0.0),
        api_key: g.api_key.clone(),
        ramp: if g.storm {
            STORM_RAMP
        } else {
            g.ramp.unwrap_or(500.0)
        },
        storm: g.storm,
        warmup: g.warmup.unwrap_or(3.0),
        duration,
        label: g.label.unwrap_or_default(),
        json: g.json,
        html: g.html,
        profile: g.profile,
        profile_call_graph: g
            .profile_call_graph
            .unwrap_or_else(|| DEFAULT_CALL_GRAPH.to_string()),
        drop: g.drop,
        verbose: g.verbose,
        workers: g
            .workers
            .unwrap_or_else(|| default_workers(pin_generator.as_ref())),
        pin_server: cpus("--pin-server", g.pin_server.as_deref())?,
        pin_generator,
    };
    check(&options)?;
    Ok(options)
}

/// Accepts `http://host:port[/]` (or `ws://`); TLS is not supported.
pub fn normalize_url(url: &str) -> Result<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("ws://"))
        .with_context(|| {
            format!("--url must start with http:// (TLS is not supported), got {url:?}")
        })?;
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains('/') {
        bail!("--url must be a base address like http://127.0.0.1:8080, got {url:?}");
    }
    Ok(format!("http://{host}"))
}
