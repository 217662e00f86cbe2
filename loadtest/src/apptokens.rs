//! App tokens for the simulated people (`--jwt-secret`, `--jwt-key`): minted here as an
//! app's backend would (docs/auth.md), so a run needs no sign-ups.

use anyhow::{anyhow, Context, Result};
use atrium_testkit::jwt::Minter;
use serde_json::{json, Value};

use crate::options::Jwt;

/// How long minted tokens live: longer than any run.
const TTL_S: i64 = 6 * 3600;

pub struct AppTokens {
    minter: Minter,
    issuer: String,
    audience: String,
    /// This run's id, in every `sub`.
    run: String,
}

impl AppTokens {
    pub fn new(jwt: &Jwt, run: &str) -> Result<Self> {
        let minter = match (&jwt.secret, &jwt.key) {
            (Some(secret), _) => {
                let mut m = Minter::hs256(secret.as_bytes());
                m.kid = jwt.kid.clone();
                m
            }
            (None, Some(path)) => {
                let pem =
                    std::fs::read(path).with_context(|| format!("--jwt-key {}", path.display()))?;
                Minter::from_private_pem(&pem, jwt.kid.clone())
                    .map_err(|e| anyhow!("--jwt-key {}: {e}", path.display()))?
            }
            (None, None) => return Err(anyhow!("no --jwt-secret or --jwt-key")),
        };
        Ok(Self {
            minter,
            issuer: jwt.issuer.clone(),
            audience: jwt.audience.clone(),
            run: run.to_string(),
        })
    }

    fn claims(&self, sub: String, files: Value) -> Value {
        let now = atrium_testkit::jwt::now_s();
        json!({
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub,
            "name": sub,
            "iat": now,
            "exp": now + TTL_S,
            "files": files,
        })
    }

    /// The files' owner: may create files, which are then its own.
    pub fn owner(&self) -> String {
        let mut c = self.claims(format!("load-{}-owner", self.run), json!({}));
        c["create"] = json!("sub");
        self.minter.sign(&c)
    }

    /// Simulated person `account`'s token for one file, as editor or viewer.
    pub fn person(&self, account: usize, file: &str, edit: bool) -> String {
        let level = if edit { "edit" } else { "view" };
        let files = json!({ file: level });
        self.minter
            .sign(&self.claims(format!("load-{}-{account}", self.run), files))
    }
}
