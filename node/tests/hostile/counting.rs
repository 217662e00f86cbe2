//! Sockets that count what they send and receive, to put what the node
//! sends because of one against what that one sent.

use super::*;

pub(super) const DEFLATE_HEADER: &str = "Sec-WebSocket-Extensions: permessage-deflate\r\n";
/// The first byte of a compressed text frame (FIN, RSV1, text).
pub(super) const TEXT_DEFLATED: u8 = 0xc1;

/// A socket that counts every byte it writes, so what the node sends others
/// because of it can be put against what it sent.
pub(super) struct Sender {
    pub(super) raw: Raw,
    pub(super) sent: usize,
}

impl Sender {
    /// Upgrades (with permessage-deflate) and says hello; waits for the welcome.
    pub(super) async fn join(port: u16, file: &str, hello: &Hello) -> Sender {
        Self::join_with(port, file, hello, DEFLATE_HEADER).await
    }

    pub(super) async fn join_with(port: u16, file: &str, hello: &Hello, extra: &str) -> Sender {
        let joined = Self::try_join(port, file, hello, extra).await;
        joined.unwrap_or_else(|other| panic!("expected a welcome, got {other:?}"))
    }

    /// Joins, or says how the node answered instead of a welcome.
    pub(super) async fn try_join(
        port: u16,
        file: &str,
        hello: &Hello,
        extra: &str,
    ) -> Result<Sender, Got> {
        let raw = Raw::try_connect(port, file, extra, None)
            .await
            .map_err(Got::Refused)?;
        let hello = hello.to_json().to_string();
        // The upgrade request itself is about 200 bytes; counted as 200.
        let mut sender = Sender { raw, sent: 200 };
        sender.text(&hello).await;
        loop {
            match sender.raw.next(WAIT).await {
                Got::Text(w) if w["type"] == "welcome" => return Ok(sender),
                Got::Text(m) if PRESENCE_TYPES.contains(&s(&m["type"])) => continue,
                other => return Err(other),
            }
        }
    }

    pub(super) async fn text(&mut self, text: &str) {
        let f = client_frame(TEXT, text.as_bytes());
        self.sent += f.len();
        self.raw.send(&f).await;
    }

    pub(super) async fn deflated(&mut self, text: &str) {
        let f = client_frame(TEXT_DEFLATED, &deflate(text.as_bytes()));
        self.sent += f.len();
        self.raw.send(&f).await;
    }
}

/// Reads a socket until told to stop; counts the bytes and the messages it got
/// and keeps the presence entries of one person.
pub(super) struct Counter {
    pub(super) bytes: Arc<AtomicU64>,
    pub(super) messages: Arc<AtomicU64>,
    pub(super) ended: Arc<Mutex<Option<String>>>,
    pub(super) entries_of: Arc<Mutex<Vec<Value>>>,
    pub(super) watch: Arc<Mutex<String>>,
}

impl Counter {
    pub(super) fn start(mut raw: Raw) -> Counter {
        let counter = Counter {
            bytes: Arc::default(),
            messages: Arc::default(),
            ended: Arc::default(),
            entries_of: Arc::default(),
            watch: Arc::default(),
        };
        let (bytes, messages, ended, entries, watch) = (
            counter.bytes.clone(),
            counter.messages.clone(),
            counter.ended.clone(),
            counter.entries_of.clone(),
            counter.watch.clone(),
        );
        tokio::spawn(async move {
            loop {
                match raw.next(Duration::from_secs(3600)).await {
                    Got::Text(m) => {
                        bytes.fetch_add(m.to_string().len() as u64, Ordering::SeqCst);
                        messages.fetch_add(1, Ordering::SeqCst);
                        if m["type"] == "presences" {
                            let who = watch.lock().unwrap().clone();
                            for p in m["people"].as_array().into_iter().flatten() {
                                if p["id"] == who.as_str() {
                                    entries.lock().unwrap().push(p.clone());
                                }
                            }
                        }
                    }
                    other => {
                        *ended.lock().unwrap() = Some(format!("{other:?}"));
                        return;
                    }
                }
            }
        });
        counter
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }
}
