//! Setup through the HTTP API (accounts, files with their documents, edit links) and the plan
//! that says which client goes where.

use rand::distr::{Alphanumeric, SampleString};
use serde_json::{json, Map, Value};

use crate::http::Endpoint;
use crate::options::Options;

/// Rectangles on every page.
mod api;

pub use api::run;

pub const RECTS_PER_PAGE: usize = 20;

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
    /// With `--jwt-secret` / `--jwt-key`: people's app tokens are minted per socket.
    pub app_tokens: Option<crate::apptokens::AppTokens>,
}

/// A random string for secrets and client ids (at least 128 random bits at 22+ characters).
pub fn random_id(len: usize) -> String {
    Alphanumeric.sample_string(&mut rand::rng(), len)
}

#[cfg(test)]
mod tests;
