//! Opening a socket and saying hello: welcomed, refused, or let in once a place is free.

use super::*;

impl Client {
    /// Opens the socket of a file (no hello yet).
    pub async fn connect(node: &Node, file: &str) -> Client {
        let url = node.ws_url(file);
        let (ws, _resp) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("websocket upgrade timed out")
            .expect("websocket upgrade failed");
        Client { ws }
    }

    /// Opens the socket, sends `hello` and waits for `welcome` (returned).
    pub async fn join(node: &Node, file: &str, hello: &Hello) -> (Client, Value) {
        let mut c = Client::connect(node, file).await;
        c.send_json(&hello.to_json()).await;
        let welcome = c.recv_json().await;
        assert_eq!(
            welcome["type"], "welcome",
            "expected welcome, got {welcome}"
        );
        (c, welcome)
    }

    /// Joins `file` once per hello, in order: the sockets and their welcomes.
    pub async fn join_each<const N: usize>(
        node: &Node,
        file: &str,
        hellos: [Hello; N],
    ) -> [(Client, Value); N] {
        let mut joined = Vec::with_capacity(N);
        for hello in &hellos {
            joined.push(Client::join(node, file, hello).await);
        }
        match joined.try_into() {
            Ok(all) => all,
            Err(_) => unreachable!("one join per hello"),
        }
    }

    /// Opens the socket and sends `hello`, expecting the server to close it.
    pub async fn join_expect_close(node: &Node, file: &str, hello: &Hello, code: u16) {
        let mut c = Client::connect(node, file).await;
        c.send_json(&hello.to_json()).await;
        // No welcome (nor anything else about the file) may come first.
        match c.next_non_presence(WAIT).await {
            Event::Close(got) => assert_eq!(got, Some(code), "hello closed with the wrong code"),
            other => panic!("expected a close with {code} after hello, got {other:?}"),
        }
    }

    /// Opens the socket of a file with extra headers on the upgrade request.
    pub async fn connect_with(node: &Node, file: &str, headers: &[(&str, &str)]) -> Client {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
        let mut req = node
            .ws_url(file)
            .into_client_request()
            .expect("websocket request");
        for (k, v) in headers {
            req.headers_mut().insert(
                HeaderName::from_bytes(k.as_bytes()).expect("header name"),
                HeaderValue::from_str(v).expect("header value"),
            );
        }
        let (ws, _resp) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
            .await
            .expect("websocket upgrade timed out")
            .expect("websocket upgrade failed");
        Client { ws }
    }

    /// Opens the socket (with extra upgrade headers) and says hello. Returns
    /// the client and its welcome, or what came instead of the welcome (a
    /// close, mostly). Sending the hello may fail when the server already
    /// closed the socket; that is left for the read to report.
    pub async fn try_join_with(
        node: &Node,
        file: &str,
        hello: &Hello,
        headers: &[(&str, &str)],
    ) -> Result<(Client, Value), Event> {
        let mut c = Client::connect_with(node, file, headers).await;
        let _ =
            tokio::time::timeout(WAIT, c.ws.send(Message::text(hello.to_json().to_string()))).await;
        match c.next_non_presence(WAIT).await {
            Event::Json(v) if v["type"] == "welcome" => Ok((c, v)),
            other => Err(other),
        }
    }

    /// [`Client::try_join_with`] without extra headers.
    pub async fn try_join(
        node: &Node,
        file: &str,
        hello: &Hello,
    ) -> Result<(Client, Value), Event> {
        Client::try_join_with(node, file, hello, &[]).await
    }

    /// Joins (with extra upgrade headers), asserting a welcome.
    pub async fn join_with(
        node: &Node,
        file: &str,
        hello: &Hello,
        headers: &[(&str, &str)],
    ) -> (Client, Value) {
        match Client::try_join_with(node, file, hello, headers).await {
            Ok(joined) => joined,
            Err(other) => panic!("expected a welcome, got {other:?}"),
        }
    }

    /// Joins (with extra upgrade headers), asserting that the server closes
    /// the socket with `code` instead of welcoming it.
    pub async fn join_refused_with(
        node: &Node,
        file: &str,
        hello: &Hello,
        headers: &[(&str, &str)],
        code: u16,
    ) {
        match Client::try_join_with(node, file, hello, headers).await {
            Ok((_, w)) => panic!("expected a close with {code}, got a welcome: {w}"),
            Err(Event::Close(got)) => {
                assert_eq!(got, Some(code), "refused with the wrong close code")
            }
            Err(other) => panic!("expected a close with {code}, got {other:?}"),
        }
    }

    /// Joins, retrying while the server refuses with `code`, for up to `dur`
    /// (a slot being freed a moment after a socket closed).
    pub async fn join_when_freed(
        node: &Node,
        file: &str,
        hello: &Hello,
        code: u16,
        dur: Duration,
    ) -> (Client, Value) {
        let deadline = Instant::now() + dur;
        loop {
            match Client::try_join(node, file, hello).await {
                Ok(joined) => return joined,
                Err(Event::Close(Some(got))) if got == code && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(other) => panic!("expected a welcome within {dur:?}, got {other:?}"),
            }
        }
    }

    /// A join refused with `code` while the file or the address is full; once
    /// `free` has run (someone left), the same hello gets in within 5 s.
    pub async fn refused_until_freed(
        node: &Node,
        file: &str,
        hello: &Hello,
        code: u16,
        free: impl std::future::Future<Output = ()>,
    ) -> (Client, Value) {
        Client::join_refused_with(node, file, hello, &[], code).await;
        free.await;
        Client::join_when_freed(node, file, hello, code, Duration::from_secs(5)).await
    }
}
