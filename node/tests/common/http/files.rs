//! Files over HTTP: creating, sharing, changing and reading them.

use super::*;

/// A file-creation attempt named `name` holding `doc`; the answer, whatever it is.
pub async fn create_file_answer(node: &Node, token: &str, name: &str, doc: Option<Value>) -> Resp {
    let mut body = json!({ "name": name });
    if let Some(doc) = doc {
        body["doc"] = doc;
    }
    send_json(node, "POST", "/api/files", Some(token), &body).await
}

/// Creates a file; returns the creation answer (id, name, link, keys, version).
pub async fn create_file(node: &Node, token: &str, name: &str, doc: Option<Value>) -> Value {
    let r = create_file_answer(node, token, name, doc).await;
    r.assert_status(201);
    r.body().clone()
}

/// `PATCH /api/files/{file}` with `body` (a new name, a link setting) and an
/// optional session token; the answer, whatever it is.
pub async fn patch_file(node: &Node, token: Option<&str>, file: &str, body: &Value) -> Resp {
    send_json(node, "PATCH", &format!("/api/files/{file}"), token, body).await
}

/// A new account and a private file of its own: (owner's token, file id).
pub async fn owned_file(node: &Node) -> (String, String) {
    let owner = new_account(node, "owner").await;
    let file = create_file(node, &owner, "Board", None).await;
    (owner, s(&file["id"]).to_string())
}

/// A file with its owner's token and its two keys.
pub struct SharedFile {
    pub owner: String,
    pub id: String,
    pub edit_key: String,
    pub view_key: String,
}

impl SharedFile {
    /// A hello as the file's owner.
    pub fn by_owner(&self) -> Hello {
        Hello::token(&self.owner)
    }

    /// A hello with the file's edit key.
    pub fn by_edit_key(&self) -> Hello {
        Hello::key(&self.edit_key)
    }

    /// A hello with the file's view key.
    pub fn by_view_key(&self) -> Hello {
        Hello::key(&self.view_key)
    }

    /// The owner's, the edit key's and the view key's hellos, in that order.
    pub fn everyone(&self) -> [Hello; 3] {
        [self.by_owner(), self.by_edit_key(), self.by_view_key()]
    }
}

/// A node started with `envs`, and a new account's file on it with an edit link.
pub async fn node_with_file(envs: &[(&str, &str)]) -> (Node, SharedFile) {
    let node = Node::start(envs).await;
    let file = shared_file(&node, "edit").await;
    (node, file)
}

/// A new account's file named "Board", its link set to `link` ("none" keeps it private).
pub async fn shared_file(node: &Node, link: &str) -> SharedFile {
    let owner = new_account(node, "owner").await;
    file_of(node, owner, "Board", link).await
}

/// A new file of `owner`'s, its link set to `link` ("none" keeps it private).
pub async fn file_of(node: &Node, owner: String, name: &str, link: &str) -> SharedFile {
    let file = create_file(node, &owner, name, None).await;
    let id = s(&file["id"]).to_string();
    if link != "none" {
        set_link(node, &owner, &id, link).await;
    }
    SharedFile {
        owner,
        id,
        edit_key: s(&file["edit_key"]).to_string(),
        view_key: s(&file["view_key"]).to_string(),
    }
}

/// `POST /api/files/{file}/keys`: new keys for the file; the answer, whatever it is.
pub async fn rotate_keys(node: &Node, token: &str, file: &str) -> Resp {
    send_empty(
        node,
        "POST",
        &format!("/api/files/{file}/keys"),
        Some(token),
    )
    .await
}

/// `GET /api/files`: the files the token's account owns.
pub async fn list_files(node: &Node, token: &str) -> Vec<Value> {
    let r = get(node, "/api/files", Some(token)).await;
    r.assert_status(200);
    r.body()["files"]
        .as_array()
        .unwrap_or_else(|| panic!("a file list without files: {}", r.text))
        .clone()
}

/// Sets a file's `link` setting as its owner.
pub async fn set_link(node: &Node, token: &str, file: &str, link: &str) {
    let r = patch_file(node, Some(token), file, &json!({ "link": link })).await;
    r.assert_status(200);
    assert_eq!(r.body()["link"], json!(link), "PATCH answer: {}", r.text);
}

/// `GET /api/files/{id}/doc` as the owner: (version, doc).
pub async fn get_doc(node: &Node, token: &str, file: &str) -> (u64, Value) {
    let r = get(node, &format!("/api/files/{file}/doc"), Some(token)).await;
    r.assert_status(200);
    let v = r.body()["version"]
        .as_u64()
        .unwrap_or_else(|| panic!("doc answer lacks a numeric version: {}", r.text));
    (v, r.body()["doc"].clone())
}

/// `POST /api/files/{file}/patches` with `key`.
pub async fn server_patch(
    node: &Node,
    key: &str,
    file: &str,
    op_id: &str,
    ops: Vec<Value>,
) -> Resp {
    send_json(
        node,
        "POST",
        &format!("/api/files/{file}/patches"),
        Some(key),
        &json!({"op_id": op_id, "ops": ops}),
    )
    .await
}

/// A document of about `bytes` bytes of JSON, in nodes of 256 KB (a node is at most 1 MiB).
pub fn large_doc(bytes: usize) -> Value {
    let nodes = (0..bytes.div_ceil(256_000))
        .map(|n| (format!("n{n}"), json!({"text": "x".repeat(256_000)})));
    Value::Object(nodes.collect())
}
