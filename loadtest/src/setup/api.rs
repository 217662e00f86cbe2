//! Accounts and files made through the HTTP API.

use anyhow::{anyhow, bail, Context, Result};
use futures_util::{stream, StreamExt, TryStreamExt};
use serde_json::Value;

use crate::http::request_until_served;

use super::*;

pub(super) async fn sign_up(endpoint: &Endpoint, run: &str, n: usize) -> Result<String> {
    let body = json!({
        "email": format!("loadtest-{run}-{n}@example.com"),
        "password": random_id(24),
        "name": format!("Load {n}"),
    });
    let answer = request_until_served(endpoint, "POST", "/api/signup", None, &body).await?;
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
    let created = request_until_served(endpoint, "POST", "/api/files", Some(owner), &body)
        .await?
        .ok("create a file")?;
    let text = |v: &Value, k: &str| {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow!("file creation answered without {k}: {v}"))
    };
    let id = text(&created, "id")?;
    request_until_served(
        endpoint,
        "PATCH",
        &format!("/api/files/{id}"),
        Some(owner),
        &json!({"link": "edit"}),
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
    let app_tokens = o
        .jwt
        .as_ref()
        .map(|jwt| crate::apptokens::AppTokens::new(jwt, &run))
        .transpose()?;
    // With app tokens, nobody signs up: the owner and the people are the app's.
    let (owner, tokens) = match &app_tokens {
        Some(app) => (app.owner(), Vec::new()),
        None => {
            let owner = sign_up(endpoint, &run, 0).await.context("setup")?;
            let tokens: Vec<String> = stream::iter(1..=o.accounts)
                .map(|n| sign_up(endpoint, &run, n))
                .buffered(4)
                .try_collect()
                .await
                .context("setup")?;
            (owner, tokens)
        }
    };
    let doc = document(o.pages);
    let files: Vec<FileKeys> = stream::iter(0..o.files)
        .map(|n| create_file(endpoint, &owner, n, &doc))
        .buffered(16)
        .try_collect()
        .await
        .context("setup")?;
    Ok(Setup {
        files,
        tokens,
        app_tokens,
    })
}
