use super::*;

fn file(id: &str) -> Route {
    Route::File(id.to_owned())
}

/// Paths and the route each is read as: files, bad ids, node internals, anything else.
fn routes() -> Vec<(String, Route)> {
    let ws = |id: &str| format!("/files/{id}/ws");
    let long = |n: usize| "x".repeat(n);
    let mut routes: Vec<(String, Route)> = [
        ("/files/abc/ws", file("abc")),
        ("/files/abc", file("abc")),
        ("/api/files/A_b-9", file("A_b-9")),
        ("/api/files/A_b-9/doc", file("A_b-9")),
        ("/api/files/a.b", Route::BadId),
        ("/api/files/a%20b/doc", Route::BadId),
        ("/files/..%2F/ws", Route::BadId),
        ("/files/é/ws", Route::BadId),
        ("/", Route::Any),
        ("/api/files", Route::Any),
        ("/api/files/", Route::Any),
        ("/api/signup", Route::Any),
        ("/health", Route::Any),
        ("/filesystem", Route::Any),
        ("/metricsx", Route::Any),
        ("/metrics", Route::Blocked),
        ("/metrics/", Route::Blocked),
        ("/ready", Route::Blocked),
        ("/ready/x", Route::Blocked),
        ("/METRICS", Route::Blocked),
        ("/Ready/", Route::Blocked),
    ]
    .into_iter()
    .map(|(path, route)| (path.to_owned(), route))
    .collect();
    // The longest id, and one character more.
    routes.push((ws(&long(MAX_ID_LEN)), file(&long(MAX_ID_LEN))));
    routes.push((ws(&long(MAX_ID_LEN + 1)), Route::BadId));
    routes
}

/// Checks every path of `routes` whose route `kind` picks.
fn check_routes(kind: fn(&Route) -> bool) {
    let picked: Vec<_> = routes().into_iter().filter(|(_, r)| kind(r)).collect();
    assert!(!picked.is_empty());
    for (path, want) in picked {
        assert_eq!(classify(&path), want, "{path}");
    }
}

#[test]
fn file_routes() {
    check_routes(|r| matches!(r, Route::File(_)));
}

#[test]
fn bad_ids() {
    check_routes(|r| *r == Route::BadId);
}

#[test]
fn other_routes() {
    check_routes(|r| *r == Route::Any);
}

#[test]
fn node_internals_are_blocked() {
    check_routes(|r| *r == Route::Blocked);
}

/// Paths, and whether each is in the canonical form [`canonical`] accepts.
const FORMS: [(&str, bool); 31] = [
    ("", false),
    ("*", false),
    ("metrics", false),
    ("//metrics", false),
    ("///ready", false),
    ("//files/abc/ws", false),
    ("/files//abc/ws", false),
    ("/api/files/abc//doc", false),
    ("/./metrics", false),
    ("/metrics/.", false),
    ("/x/../metrics", false),
    ("/..", false),
    ("/%6Detrics", false),
    ("/%6detrics", false),
    ("/%2E/metrics", false),
    ("/%2e%2e/metrics", false),
    ("/api/files/%61bc", false),
    ("/files/a%7E/ws", false),
    ("/x%", false),
    ("/x%4", false),
    ("/x%zz", false),
    ("/", true),
    ("/health", true),
    ("/metrics/", true),
    ("/files/abc/ws", true),
    ("/api/files/", true),
    ("/assets/app.js", true),
    ("/x/..y/.z", true),
    ("/api/files/a%20b/doc", true),
    ("/files/..%2F/ws", true),
    ("/files/%2f", true),
];

#[test]
fn paths_not_in_canonical_form_are_refused() {
    for (p, _) in FORMS.iter().filter(|(_, is)| !is) {
        assert!(!canonical(p), "{p:?} is not canonical");
        assert_eq!(classify(p), Route::BadPath, "{p:?}");
    }
}

#[test]
fn canonical_paths() {
    for (p, _) in FORMS.iter().filter(|(_, is)| *is) {
        assert!(canonical(p), "{p:?} is canonical");
    }
}
