//! HTTP to a node: requests, accounts, files and documents.

use super::*;

pub use atrium_testkit::http::Resp;

/// Sends one request to the node on a fresh connection and reads the whole answer.
pub async fn http(
    node: &Node,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    http_at(node.port, method, path, headers, body).await
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// GET with an optional session token.
pub async fn get(node: &Node, path: &str, token: Option<&str>) -> Resp {
    match token {
        Some(t) => http(node, "GET", path, &[("authorization", &bearer(t))], None).await,
        None => http(node, "GET", path, &[], None).await,
    }
}

/// GET with a link key (and no token).
pub async fn get_with_key(node: &Node, path: &str, key: &str) -> Resp {
    http(node, "GET", path, &[("x-atrium-key", key)], None).await
}

/// A request with a JSON body and an optional session token.
pub async fn send_json(
    node: &Node,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Resp {
    let raw = body.to_string().into_bytes();
    match token {
        Some(t) => {
            http(
                node,
                method,
                path,
                &[("authorization", &bearer(t))],
                Some(raw),
            )
            .await
        }
        None => http(node, method, path, &[], Some(raw)).await,
    }
}

/// A request without a body and an optional session token.
pub async fn send_empty(node: &Node, method: &str, path: &str, token: Option<&str>) -> Resp {
    match token {
        Some(t) => http(node, method, path, &[("authorization", &bearer(t))], None).await,
        None => http(node, method, path, &[], None).await,
    }
}

/// A sign-up attempt; the answer, whatever it is.
pub async fn signup_answer(node: &Node, email: &str, password: &str, name: &str) -> Resp {
    let body = json!({"email": email, "password": password, "name": name});
    send_json(node, "POST", "/api/signup", None, &body).await
}

/// Signs up a new account; returns (token, account).
pub async fn signup(node: &Node, email: &str) -> (String, Value) {
    let r = signup_answer(node, email, PASSWORD, "Test Person").await;
    r.assert_status(201);
    let token = r.body()["token"]
        .as_str()
        .unwrap_or_else(|| panic!("sign-up answer lacks a token: {}", r.text))
        .to_string();
    (token, r.body()["account"].clone())
}

/// A sign-in attempt; the answer, whatever it is.
pub async fn signin_answer(node: &Node, email: &str, password: &str) -> Resp {
    let body = json!({"email": email, "password": password});
    send_json(node, "POST", "/api/signin", None, &body).await
}

/// Signs in with the test password; the new session's token.
pub async fn signin(node: &Node, email: &str) -> String {
    let r = signin_answer(node, email, PASSWORD).await;
    r.assert_status(200);
    s(&r.body()["token"]).to_string()
}

/// A token that still opens the account: `GET /api/me` answers 200.
pub async fn assert_token_works(node: &Node, token: &str) {
    get(node, "/api/me", Some(token)).await.assert_status(200);
}

/// A token that no longer opens anything: the account routes answer 401 and a
/// socket to `file` closes with 4001.
pub async fn assert_token_refused(node: &Node, token: &str, file: &str) {
    for path in ["/api/me", "/api/files"] {
        get(node, path, Some(token))
            .await
            .assert_error(401, "unauthorized");
    }
    Client::join_expect_close(node, file, &Hello::token(token), 4001).await;
}

/// A sign-in attempt on `port` as if from `from` (`X-Forwarded-For`, for a node that
/// trusts the test as its proxy); the answer, whatever it is.
pub async fn signin_from(port: u16, email: &str, password: &str, from: &str) -> Resp {
    let body = json!({"email": email, "password": password}).to_string();
    let headers = [("x-forwarded-for", from)];
    http_at(
        port,
        "POST",
        "/api/signin",
        &headers,
        Some(body.into_bytes()),
    )
    .await
}

/// Signs up an account with a unique email; returns its token.
pub async fn new_account(node: &Node, who: &str) -> String {
    signup(node, &unique_email(who)).await.0
}

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

pub fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
}
