//! What a request path asks for: a file's node, any node, or nothing at all.

/// The router's reading of a request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/files/{id}...` or `/api/files/{id}...`: the node that serves the file.
    File(String),
    /// Anything else: any live node.
    Any,
    /// `/metrics` and `/ready`: node internals, never forwarded.
    Blocked,
    /// A file route whose id breaks the id rule.
    BadId,
    /// A path not in canonical form (see [`canonical`]): refused before any routing, so no
    /// spelling the router reads one way can reach a node that reads it another way.
    BadPath,
}

/// The longest file id.
pub const MAX_ID_LEN: usize = 64;

/// File ids follow `[A-Za-z0-9_-]{1,64}`.
pub fn valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `path` (without its query) is in the canonical form the router routes by, so
/// the router and the node (which splits the path on `/` and skips every leading slash) read
/// it alike. Canonical is:
///
/// - it starts with `/`, and no segment is empty except a last one (no `//` anywhere);
/// - no segment is `.` or `..`;
/// - every `%` starts a well-formed escape (`%` and two hex digits), and no escape stands
///   for an unreserved character (`A-Z a-z 0-9 - . _ ~`), which has only one spelling: itself.
///
/// A browser or HTTP client never sends anything else on its own: such paths come from
/// hand-made requests, and the router answers them 400.
pub fn canonical(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let mut segments = rest.split('/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        if (segment.is_empty() && !last) || segment == "." || segment == ".." {
            return false;
        }
    }
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
            let (Some(hi), Some(lo)) = (hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) else {
                return false;
            };
            let decoded = (hi * 16 + lo) as u8;
            if decoded.is_ascii_alphanumeric() || matches!(decoded, b'-' | b'.' | b'_' | b'~') {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// Classifies a path (without its query).
pub fn classify(path: &str) -> Route {
    if !canonical(path) {
        return Route::BadPath;
    }
    if is_blocked(path) {
        return Route::Blocked;
    }
    let rest = path
        .strip_prefix("/api/files/")
        .or_else(|| path.strip_prefix("/files/"));
    let Some(rest) = rest else {
        return Route::Any;
    };
    let id = rest.split('/').next().unwrap_or_default();
    if id.is_empty() {
        // `/api/files/` lists or creates files: any node answers that.
        return Route::Any;
    }
    if valid_id(id) {
        Route::File(id.to_owned())
    } else {
        Route::BadId
    }
}

/// `/metrics` and `/ready` and anything under them, in any letter case (a canonical path
/// has exactly one leading slash, so its first segment is what the node routes by).
fn is_blocked(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    ["metrics", "ready"]
        .iter()
        .any(|p| first.eq_ignore_ascii_case(p))
}

#[cfg(test)]
mod tests;
