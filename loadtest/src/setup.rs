//! Setup through the HTTP API (accounts, files with their documents, edit links) and the plan
//! that says which client goes where.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use futures_util::{stream, StreamExt, TryStreamExt};
use rand::distr::{Alphanumeric, SampleString};
use serde_json::{json, Map, Value};

use crate::http::{request, Endpoint};
use crate::options::Options;

/// Rectangles on every page.
pub const RECTS_PER_PAGE: usize = 20;

const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

pub fn page_id(page: usize) -> String {
    format!("p{}", page + 1)
}

pub fn rect_id(page: usize, k: usize) -> String {
    format!("r-{}-{k}", page_id(page))
}

/// The initial document of every file: `pages` pages, each with 20 rectangles on a grid.
pub fn document(pages: usize) -> Value {
    const FILLS: [&str; 5] = ["#e03131", "#2f9e44", "#1971c2", "#f08c00", "#7048e8"];
    let mut doc = Map::new();
    for p in 0..pages {
        doc.insert(
            page_id(p),
            json!({"type": "page", "name": format!("Page {}", p + 1)}),
        );
        for k in 0..RECTS_PER_PAGE {
            doc.insert(
                rect_id(p, k),
                json!({
                    "type": "rect", "page": page_id(p),
                    "x": (k % 5) * 160, "y": (k / 5) * 120, "w": 120, "h": 80,
                    "fill": FILLS[k % FILLS.len()],
                }),
            );
        }
    }
    Value::Object(doc)
}

/// Where one client goes and what it does.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientPlan {
    pub index: usize,
    /// Index into the created files.
    pub file: usize,
    /// Its place among the file's people (0 for the first to join).
    pub seat: usize,
    pub page: usize,
    pub editor: bool,
    /// Index into the accounts' tokens, for signed-in clients.
    pub account: Option<usize>,
    /// The rectangle it moves when editing.
    pub rect: String,
}

/// Whether the `seat`-th person of a file edits: every 1/fraction-th, starting with the first,
/// so every file gets its share of editors.
pub fn is_editor(seat: usize, fraction: f64) -> bool {
    if fraction <= 0.0 {
        return false;
    }
    if seat == 0 {
        return true;
    }
    ((seat as f64) * fraction + 1e-9).floor() > ((seat - 1) as f64 * fraction + 1e-9).floor()
}

/// Spreads `users` clients evenly over files (round robin), and within a file over its pages.
pub fn plan(o: &Options) -> Vec<ClientPlan> {
    let signed_in = o.accounts.saturating_mul(o.per_account).min(o.users);
    (0..o.users)
        .map(|i| {
            let file = i % o.files;
            let seat = i / o.files;
            let page = seat % o.pages;
            ClientPlan {
                index: i,
                file,
                seat,
                page,
                editor: is_editor(seat, o.editors),
                account: (i < signed_in && o.accounts > 0).then_some(i % o.accounts.max(1)),
                rect: rect_id(page, (seat / o.pages) % RECTS_PER_PAGE),
            }
        })
        .collect()
}

/// A created file and its link keys.
#[derive(Debug, Clone)]
pub struct FileKeys {
    pub id: String,
    pub view_key: String,
    pub edit_key: String,
}

/// What setup made.
pub struct Setup {
    pub files: Vec<FileKeys>,
    pub tokens: Vec<String>,
}

/// A random string for secrets and client ids (at least 128 random bits at 22+ characters).
pub fn random_id(len: usize) -> String {
    Alphanumeric.sample_string(&mut rand::rng(), len)
}

async fn sign_up(endpoint: &Endpoint, run: &str, n: usize) -> Result<String> {
    let body = json!({
        "email": format!("loadtest-{run}-{n}@example.com"),
        "password": random_id(24),
        "name": format!("Load {n}"),
    });
    let answer = request(
        endpoint,
        "POST",
        "/api/signup",
        None,
        Some(&body),
        HTTP_TIMEOUT,
    )
    .await?;
    if answer.status == 429 {
        bail!(
            "sign-up was rate-limited (429): the node allows few sign-ups a minute per address; \
             raise ATRIUM_AUTH_PER_IP_PER_MINUTE and ATRIUM_AUTH_PER_EMAIL_PER_MINUTE, or use \
             fewer --accounts"
        );
    }
    let body = answer.ok("sign-up")?;
    body["token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("sign-up answered without a token: {body}"))
}

async fn create_file(endpoint: &Endpoint, owner: &str, n: usize, doc: &Value) -> Result<FileKeys> {
    let body = json!({"name": format!("Load test {n}"), "doc": doc});
    let created = request(
        endpoint,
        "POST",
        "/api/files",
        Some(owner),
        Some(&body),
        HTTP_TIMEOUT,
    )
    .await?
    .ok("create a file")?;
    let text = |v: &Value, k: &str| {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow!("file creation answered without {k}: {v}"))
    };
    let id = text(&created, "id")?;
    request(
        endpoint,
        "PATCH",
        &format!("/api/files/{id}"),
        Some(owner),
        Some(&json!({"link": "edit"})),
        HTTP_TIMEOUT,
    )
    .await?
    .ok("set the file's link to edit")?;
    Ok(FileKeys {
        view_key: text(&created, "view_key")?,
        edit_key: text(&created, "edit_key")?,
        id,
    })
}

/// Signs up an owner for the files plus `--accounts` accounts for the clients, then creates
/// `--files` files with their link set to edit. The owner never joins a socket, so nobody gets
/// an owner's seat.
pub async fn run(endpoint: &Endpoint, o: &Options) -> Result<Setup> {
    let run = random_id(10).to_lowercase();
    let owner = sign_up(endpoint, &run, 0).await.context("setup")?;
    let tokens: Vec<String> = stream::iter(1..=o.accounts)
        .map(|n| sign_up(endpoint, &run, n))
        .buffered(4)
        .try_collect()
        .await
        .context("setup")?;
    let doc = document(o.pages);
    let files: Vec<FileKeys> = stream::iter(0..o.files)
        .map(|n| create_file(endpoint, &owner, n, &doc))
        .buffered(16)
        .try_collect()
        .await
        .context("setup")?;
    Ok(Setup { files, tokens })
}

#[cfg(test)]
mod tests;
