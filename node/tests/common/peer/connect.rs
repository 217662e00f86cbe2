//! Finding a file's node the way a router sends a client.

use super::*;

impl Peer {
    /// Connects the way a router sends a client: to the file's live lease
    /// holder when there is one, else to the ring owner of the up nodes. The
    /// holder is learnt as a router would not need to: after a 4009, by asking
    /// the refusing node over HTTP (its 409 `moved` names the holder). `first`
    /// is tried before anything else. Retries with a short backoff until
    /// `patience` runs out; panics on a refusal a client must not retry
    /// (4001, 4003, 4004, 4029, ...).
    pub async fn connect(&mut self, dir: &Directory, first: Option<&str>, patience: Duration) {
        let deadline = Instant::now() + patience;
        let mut backoff = Duration::from_millis(50);
        let mut next: Option<String> = first.map(str::to_string);
        loop {
            let target = match next.take() {
                Some(id) => id,
                None => dir.owner(&self.file),
            };
            let port = dir.port_of(&target);
            let mut hello = self.hello.clone();
            hello.since = self.welcomed_once.then_some(self.version);
            let tried = if port == 0 {
                // A node still starting: not reachable yet.
                Err(Refusal::Unreachable("starting".into()))
            } else {
                attempt(port, &self.file, &hello, Duration::from_secs(3)).await
            };
            match tried {
                Ok((c, welcome)) => {
                    self.ws = Some(c);
                    self.at = Some(target.clone());
                    self.welcomed(&welcome);
                    self.welcomes.lock().unwrap().push((Instant::now(), target));
                    self.resend().await;
                    return;
                }
                Err(Refusal::Closed(code)) => {
                    self.refusals.push((target.clone(), code));
                    match code {
                        Some(4009) => {
                            if let Some(holder) = self.ask_holder(port).await {
                                if holder != target {
                                    next = Some(holder);
                                    continue;
                                }
                            }
                        }
                        Some(1011..=1013) | None => {}
                        Some(other) => panic!(
                            "peer {} of {} refused by {target} with close {other}",
                            self.label, self.file
                        ),
                    }
                }
                Err(Refusal::Unreachable(_)) => {}
            }
            assert!(
                Instant::now() < deadline,
                "peer {} found no node serving {} within {patience:?} (refusals: {:?})",
                self.label,
                self.file,
                self.refusals
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(400));
        }
    }

    /// The holder a node names for this file (its 409 `moved`), if any.
    pub(super) async fn ask_holder(&self, port: u16) -> Option<String> {
        let auth;
        let header = match (&self.hello.token, &self.hello.key) {
            (Some(t), _) => {
                auth = bearer(t);
                ("authorization", auth.as_str())
            }
            (None, Some(k)) => ("x-atrium-key", k.as_str()),
            (None, None) => return None,
        };
        let path = format!("/api/files/{}", self.file);
        let r = try_http_at(port, "GET", &path, &[header], Duration::from_secs(2)).await?;
        if r.status != 409 {
            return None;
        }
        Some(moved_to(&r))
    }
}
