//! Handshake tests: the RFC sample key, deflate offers, refused requests.

use super::deflate_offer::DEFLATE_ANSWER;
use super::*;

fn request(extra: &[(&str, &str)]) -> Request<()> {
    let mut builder = Request::builder()
        .method("GET")
        .uri("/socket")
        .header("Host", "example.com")
        .header("Connection", "keep-alive, Upgrade")
        .header("Upgrade", "WebSocket")
        .header("Sec-WebSocket-Version", "13")
        .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    builder.body(()).unwrap()
}

fn extensions(offer: &str, allow: bool) -> (bool, Option<String>) {
    let accepted = accept(&request(&[("Sec-WebSocket-Extensions", offer)]), allow).unwrap();
    let header = accepted.response.headers().get(EXTENSIONS);
    let header = header.map(|v| v.to_str().unwrap().to_owned());
    (accepted.deflate, header)
}

/// RFC 6455 §1.3: SHA-1 b37a4f2c...b2bec4ea, base64 "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
#[test]
fn rfc_sample_key() {
    let accepted = accept(&request(&[]), true).unwrap();
    let response = accepted.response;
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    let h = response.headers();
    assert_eq!(h[ACCEPT], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_eq!(h[header::UPGRADE], "websocket");
    assert_eq!(h[header::CONNECTION], "Upgrade");
    assert!(h.get(EXTENSIONS).is_none());
    assert!(!accepted.deflate);
}

#[test]
fn deflate_offers_accepted() {
    let plain = DEFLATE_ANSWER.to_owned();
    let with_bits = format!("{DEFLATE_ANSWER}; server_max_window_bits=15");
    let cases = [
        ("permessage-deflate", &plain),
        ("permessage-deflate; client_max_window_bits", &plain),
        ("Permessage-Deflate; Client_Max_Window_Bits=10", &plain),
        ("permessage-deflate; client_max_window_bits=\"12\"", &plain),
        ("permessage-deflate; server_no_context_takeover", &plain),
        ("permessage-deflate; server_max_window_bits=15", &with_bits),
        // The first offer is declined (window 10), the second accepted.
        (
            "permessage-deflate; server_max_window_bits=10, permessage-deflate",
            &plain,
        ),
        ("x-webkit-deflate-frame, permessage-deflate", &plain),
    ];
    for (offer, answer) in cases {
        assert_eq!(
            extensions(offer, true),
            (true, Some(answer.clone())),
            "{offer}"
        );
    }
}

#[test]
fn deflate_offers_declined() {
    let offers = [
        "permessage-deflate; server_max_window_bits=10",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; client_max_window_bits=16",
        "permessage-deflate; client_max_window_bits=7",
        "permessage-deflate; client_max_window_bits=x",
        "permessage-deflate; client_no_context_takeover; client_no_context_takeover",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; unknown_param",
        "x-webkit-deflate-frame",
        "",
    ];
    for offer in offers {
        assert_eq!(extensions(offer, true), (false, None), "{offer}");
    }
    assert_eq!(extensions("permessage-deflate", false), (false, None));
}

#[test]
fn offers_across_several_headers() {
    let req = request(&[
        ("Sec-WebSocket-Extensions", "foo"),
        (
            "Sec-WebSocket-Extensions",
            "permessage-deflate; client_max_window_bits",
        ),
    ]);
    assert!(accept(&req, true).unwrap().deflate);
}

fn refused(req: Request<()>) -> HandshakeError {
    match accept(&req, true) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}

fn without(name: &str) -> Request<()> {
    let mut req = request(&[]);
    req.headers_mut().remove(name);
    req
}

#[test]
fn bad_requests_refused() {
    for name in ["connection", "upgrade"] {
        assert!(matches!(refused(without(name)), HandshakeError::NotUpgrade));
    }
    let mut post = request(&[]);
    *post.method_mut() = Method::POST;
    assert!(matches!(refused(post), HandshakeError::NotUpgrade));
    let mut old = request(&[]);
    *old.version_mut() = Version::HTTP_10;
    assert!(matches!(refused(old), HandshakeError::NotUpgrade));
    let mut other = request(&[]);
    other
        .headers_mut()
        .insert(header::UPGRADE, HeaderValue::from_static("h2c"));
    assert!(matches!(refused(other), HandshakeError::NotUpgrade));

    assert!(matches!(
        refused(without(VERSION)),
        HandshakeError::BadVersion
    ));
    let mut v8 = request(&[]);
    v8.headers_mut()
        .insert(VERSION, HeaderValue::from_static("8"));
    assert!(matches!(refused(v8), HandshakeError::BadVersion));

    assert!(matches!(refused(without(KEY)), HandshakeError::MissingKey));
    let mut short = request(&[]);
    short
        .headers_mut()
        .insert(KEY, HeaderValue::from_static("c2hvcnQ="));
    assert!(matches!(refused(short), HandshakeError::MissingKey));
    let twice = request(&[("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]);
    assert!(matches!(refused(twice), HandshakeError::MissingKey));
}

#[test]
fn an_upgrade_with_a_body_is_refused() {
    for extra in [("Content-Length", "12"), ("Transfer-Encoding", "chunked")] {
        let refused = accept(&request(&[extra]), true);
        assert!(
            matches!(refused, Err(HandshakeError::WithBody)),
            "{extra:?}"
        );
    }
    assert!(accept(&request(&[("Content-Length", "0")]), true).is_ok());
}
