//! The claims of an app token: who the person is, what they may reach, and for how long.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ids::{is_valid_id, AccountId, FileId};
use crate::protocol::clean_name;

/// What a grant gives on a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    View,
    Edit,
}

/// Who owns the files a token creates (`"create"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grant {
    /// The token's `sub`.
    Sub,
    /// The app: nobody's in particular; reached only through grants.
    App,
}

/// The claims the node reads; others are ignored. `iss`, `aud` and `exp` are checked by
/// the verifier before these are read.
#[derive(Debug, Clone, Deserialize)]
pub struct AppClaims {
    pub sub: String,
    pub exp: i64,
    #[serde(default)]
    pub nbf: Option<i64>,
    #[serde(default)]
    pub iat: Option<i64>,
    #[serde(default)]
    pub jti: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub color: Option<String>,
    #[serde(default)]
    pub avatar: Option<String>,
    /// File ids, or prefixes ending in `*`, to what they give.
    #[serde(default)]
    pub files: BTreeMap<String, Level>,
    /// Whether the person may create files, and who owns them.
    #[serde(default)]
    pub create: Option<Grant>,
}

/// Longest `sub` the node takes.
pub const MAX_SUB: usize = 256;

impl AppClaims {
    /// Checks what serde cannot: a usable `sub`, a plain `color`, an https `avatar`.
    pub(super) fn check(mut self) -> Result<Self, String> {
        if self.sub.is_empty() || self.sub.len() > MAX_SUB || self.sub.chars().any(char::is_control)
        {
            return Err(
                "`sub` must be 1 to 256 characters, none of them control characters".into(),
            );
        }
        self.name = self.name.map(|n| clean_name(&n)).filter(|n| !n.is_empty());
        self.color = self.color.filter(|c| {
            c.len() == 7 && c.starts_with('#') && c[1..].bytes().all(|b| b.is_ascii_hexdigit())
        });
        self.avatar = self.avatar.filter(|a| {
            a.len() <= 2048 && a.starts_with("https://") && !a.contains(['"', '<', '>', ' '])
        });
        // A `jti` that could not be revoked (the revoke route takes 1 to 256 bytes) is not
        // taken: the token is refused, as one with a `sub` too long is (the fifteenth review).
        if self.jti.as_ref().is_some_and(|j| j.len() > MAX_SUB) {
            return Err("`jti` must be at most 256 bytes".into());
        }
        self.jti = self.jti.filter(|j| !j.is_empty());
        Ok(self)
    }

    /// What the grant gives on `file`: an exact entry wins, else the longest prefix.
    pub fn level(&self, file: &FileId) -> Option<Level> {
        let id = file.as_str();
        if let Some(l) = self.files.get(id) {
            return Some(*l);
        }
        self.files
            .iter()
            .filter_map(|(k, l)| Some((k.strip_suffix('*')?, l)))
            .filter(|(prefix, _)| id.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, l)| *l)
    }

    /// The account id the person stands for: the owner of the files they create
    /// (with `"create": "sub"`) and their id in presence and history.
    pub fn account(&self) -> AccountId {
        owner_for(Some(&self.sub))
    }

    /// The name shown to others: `name`, else the `sub`.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| clean_name(&self.sub))
    }
}

/// The account id of an app person (`Some(sub)`) or of the app itself (`None`).
/// Atrium's own account ids are base62 and never hold a `-`, so these never meet one:
/// `app-` for the app, `sub-` and the sub itself when it is a valid id of up to 60
/// characters, else `sbh-` and 43 characters of its SHA-256 (base64url).
pub fn owner_for(sub: Option<&str>) -> AccountId {
    let id = match sub {
        None => "app-".to_owned(),
        Some(s) if s.len() <= 60 && is_valid_id(s) => format!("sub-{s}"),
        Some(s) => {
            use base64::Engine;
            let d = crate::ids::digest(s);
            format!(
                "sbh-{}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(d)
            )
        }
    };
    AccountId::parse(&id).expect("owner ids follow the id rule")
}
