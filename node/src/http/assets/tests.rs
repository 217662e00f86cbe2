use super::*;

#[test]
fn every_client_module_is_embedded() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // The page's own modules, and the client package's, which the page imports.
    for (dir, prefix) in [("web/src", "src"), ("clients/js/src", "client")] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".js") {
                let path = format!("{prefix}/{name}");
                assert!(
                    FILES.iter().any(|(p, _, _)| *p == path),
                    "{path} is missing from FILES in node/src/http/assets.rs"
                );
            }
        }
    }
}

#[test]
fn the_page_maps_the_client_package_to_this_build() {
    let a = assets();
    let page = std::str::from_utf8(&a.index.bytes).unwrap();
    assert!(page.contains(&format!(
        "\"@atrium/client\": \"/assets/{}/client/index.js\"",
        a.build
    )));
    assert!(a.files.contains_key("client/index.js"));
}

#[test]
fn the_page_points_at_this_build() {
    let a = assets();
    let page = std::str::from_utf8(&a.index.bytes).unwrap();
    assert!(page.contains(&format!("\"/assets/{}/src/app.js\"", a.build)));
    assert!(page.contains(&format!("\"/assets/{}/style.css\"", a.build)));
    assert!(!page.contains("\"/assets/src/"));
    assert_eq!(a.build.len(), 16);
}
