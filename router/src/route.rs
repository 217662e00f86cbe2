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

/// Classifies a path (without its query).
pub fn classify(path: &str) -> Route {
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

fn is_blocked(path: &str) -> bool {
    ["/metrics", "/ready"].iter().any(|p| {
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(id: &str) -> Route {
        Route::File(id.to_owned())
    }

    #[test]
    fn file_routes() {
        assert_eq!(classify("/files/abc/ws"), file("abc"));
        assert_eq!(classify("/files/abc"), file("abc"));
        assert_eq!(classify("/api/files/A_b-9"), file("A_b-9"));
        assert_eq!(classify("/api/files/A_b-9/doc"), file("A_b-9"));
        assert_eq!(
            classify(&format!("/files/{}/ws", "x".repeat(64))),
            file(&"x".repeat(64))
        );
    }

    #[test]
    fn bad_ids() {
        assert_eq!(
            classify(&format!("/files/{}/ws", "x".repeat(65))),
            Route::BadId
        );
        assert_eq!(classify("/api/files/a.b"), Route::BadId);
        assert_eq!(classify("/api/files/a%20b/doc"), Route::BadId);
        assert_eq!(classify("/files/..%2F/ws"), Route::BadId);
        assert_eq!(classify("/files/é/ws"), Route::BadId);
    }

    #[test]
    fn other_routes() {
        assert_eq!(classify("/"), Route::Any);
        assert_eq!(classify("/api/files"), Route::Any);
        assert_eq!(classify("/api/files/"), Route::Any);
        assert_eq!(classify("/api/signup"), Route::Any);
        assert_eq!(classify("/health"), Route::Any);
        assert_eq!(classify("/filesystem"), Route::Any);
        assert_eq!(classify("/metricsx"), Route::Any);
    }

    #[test]
    fn node_internals_are_blocked() {
        for p in ["/metrics", "/metrics/", "/ready", "/ready/x"] {
            assert_eq!(classify(p), Route::Blocked, "{p}");
        }
    }
}
