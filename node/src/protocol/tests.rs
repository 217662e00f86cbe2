use super::*;

fn limits() -> DocLimits {
    DocLimits::default()
}

#[test]
fn hello_parses_and_checks_the_client_id() {
    let m = parse(
        r#"{"type":"hello","token":null,"key":"k","client":"c1","since":4,"name":"Ann\u0007"}"#,
        &limits(),
    )
    .unwrap();
    let ClientMessage::Hello(h) = m else {
        panic!("not a hello")
    };
    assert_eq!(h.key.as_deref(), Some("k"));
    assert_eq!(h.since, Some(4));
    assert_eq!(h.name.as_deref(), Some("Ann"));
    assert!(parse(r#"{"type":"hello","client":"../x"}"#, &limits()).is_err());
    assert!(parse(r#"{"type":"hello","client":"c","since":-1}"#, &limits()).is_err());
}

#[test]
fn patch_keeps_t_verbatim_and_reports_its_id() {
    let m = parse(r#"{"type":"patch","id":7,"ops":[],"t":12.50}"#, &limits()).unwrap();
    let ClientMessage::Patch(p) = m else {
        panic!("not a patch")
    };
    assert_eq!(p.t.as_deref(), Some("12.50"));
    assert_eq!(
        ack(7, 3, p.t.as_deref()),
        r#"{"type":"ack","id":7,"v":3,"t":12.50}"#
    );
    let r = parse(r#"{"type":"patch","id":8,"ops":[{"op":"zap"}]}"#, &limits()).unwrap_err();
    assert_eq!((r.id, r.code), (Some(8), "invalid"));
    let r = parse(r#"{"type":"patch","id":0,"ops":[]}"#, &limits()).unwrap_err();
    assert_eq!(r.id, None);
    let r = parse(r#"{"type":"patch","id":9,"ops":[],"t":"1"}"#, &limits()).unwrap_err();
    assert_eq!(r.code, "invalid");
}

#[test]
fn guest_names_cannot_hide_or_reorder_text() {
    assert_eq!(clean_name("\u{202E}renwO"), "renwO");
    assert_eq!(clean_name("Ow\u{200B}ner\u{2066}"), "Owner");
    assert_eq!(clean_name("  Ann \u{3000}\t Lee  "), "Ann Lee");
    assert_eq!(clean_name("\u{FEFF}\u{2067}\u{E0041}"), "");
    assert_eq!(clean_name("名前 é"), "名前 é");
    assert_eq!(clean_name(&"x".repeat(100)).chars().count(), 64);
}

#[test]
fn relayed_numbers_are_bounded() {
    let long = format!("1{}", "0".repeat(40));
    let text = format!(r#"{{"type":"presence","t":{long}}}"#);
    assert_eq!(parse(&text, &limits()).unwrap_err().code, "invalid");
    let text = format!(r#"{{"type":"patch","id":3,"ops":[],"t":{long}}}"#);
    assert_eq!(parse(&text, &limits()).unwrap_err().id, Some(3));
    let ok = r#"{"type":"presence","t":-1.7976931348623157e+308}"#;
    assert!(parse(ok, &limits()).is_ok());
}

/// A patch's ops are relayed as the node writes them; numbers in exponent form would
/// come out longer than they went in (4 bytes to 18 each), so such a patch is refused.
#[test]
fn a_relayed_patch_is_no_larger_than_what_was_sent() {
    let op = |x: &str| format!(r#"{{"op":"set","id":"a","props":{{"x":[{x}]}}}}"#);
    let numbers = |x: &str| vec![x; 500].join(",");
    let grown = format!(
        r#"{{"type":"patch","id":4,"ops":[{}]}}"#,
        op(&numbers("1e15"))
    );
    let r = parse(&grown, &limits()).unwrap_err();
    assert_eq!((r.id, r.code), (Some(4), "too-large"));
    // Everyday numbers, whitespace and an exponent here and there pass.
    let everyday = ["12.5", "1000000000000000", "-0.001", " 7 ", "2.5e-3"].map(numbers);
    let one_exponent = format!("1e3,{}", numbers("2"));
    for x in everyday.iter().chain([&one_exponent]) {
        let text = format!(r#"{{"type":"patch","id":5,"ops":[{}]}}"#, op(x));
        let ClientMessage::Patch(p) = parse(&text, &limits()).unwrap() else {
            panic!("not a patch")
        };
        assert!(p.ops_json.len() <= text.len() + text.len() / 8, "{x}");
    }
}

#[test]
fn a_patch_is_known_by_its_type_before_its_ops_are_read() {
    let text = r#"{"type":"patch","id":9,"ops":[{"op":"zap"}]}"#;
    let m = read(text).unwrap();
    assert_eq!(m.kind, Kind::Patch);
    let r = m.refuse("viewer", "no");
    assert_eq!((r.id, r.code), (Some(9), "viewer"));
    assert_eq!(read(r#"{"type":"presence"}"#).unwrap().kind, Kind::Presence);
}

#[test]
fn garbage_is_invalid_not_a_panic() {
    for text in [
        "",
        "nul",
        "[]",
        "{}",
        r#"{"type":5}"#,
        r#"{"type":"nope"}"#,
        "{\"type\":\"patch\"",
    ] {
        let r = parse(text, &limits()).unwrap_err();
        assert_eq!(r.code, "invalid", "{text}");
    }
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let text = format!(r#"{{"type":"patch","id":1,"ops":{deep}}}"#);
    assert!(parse(&text, &limits()).is_err());
}

#[test]
fn presence_fields_keep_missing_apart_from_null() {
    let m = parse(
        r#"{"type":"presence","cursor":[1,2],"sel":null}"#,
        &limits(),
    )
    .unwrap();
    let ClientMessage::Presence(p) = m else {
        panic!("not presence")
    };
    assert_eq!(p.cursor, Some(Some([1.0, 2.0])));
    assert_eq!(p.sel, Some(None));
    assert!(p.page.is_none());
    assert!(parse(r#"{"type":"presence","cursor":[1]}"#, &limits()).is_err());
    let many: Vec<String> = (0..101).map(|i| format!("\"n{i}\"")).collect();
    let text = format!(r#"{{"type":"presence","sel":[{}]}}"#, many.join(","));
    assert!(parse(&text, &limits()).is_err());
    // The longest valid `sel` passes; a megabyte of short ids is refused unread.
    let longest: Vec<String> = (0..100)
        .map(|i| format!("\"{}{i:02}\"", "q".repeat(62)))
        .collect();
    let text = format!(r#"{{"type":"presence","sel":[{}]}}"#, longest.join(", "));
    assert!(parse(&text, &limits()).is_ok());
    let text = format!(
        r#"{{"type":"presence","sel":[{}"a"]}}"#,
        "\"a\",".repeat(250_000)
    );
    assert!(parse(&text, &limits()).is_err());
}

#[test]
fn fields_are_read_as_a_map_would_read_them() {
    // A repeated name counts by its last value; an escaped name is still its name.
    let m = parse(
        r#"{"type":"presence","cursor":[1,2],"\u0063ursor":[3,4.5]}"#,
        &limits(),
    )
    .unwrap();
    let ClientMessage::Presence(p) = m else {
        panic!("not a presence")
    };
    assert_eq!(p.cursor, Some(Some([3.0, 4.5])));
    for bad in [
        r#"{"type":"presence","cursor":[1]}"#,
        r#"{"type":"presence","cursor":[1,2,3]}"#,
        r#"{"type":"presence","cursor":[1,"2"]}"#,
        r#"{"type":"presence","camera":[1,2]}"#,
        r#"["type","presence"]"#,
    ] {
        assert!(parse(bad, &limits()).is_err(), "{bad}");
    }
    let m = parse(
        r#"{"type":"presence","cursor":null,"camera":[1,2,0.5]}"#,
        &limits(),
    )
    .unwrap();
    let ClientMessage::Presence(p) = m else {
        panic!("not a presence")
    };
    assert_eq!(
        (p.cursor, p.camera),
        (Some(None), Some(Some([1.0, 2.0, 0.5])))
    );
}

#[test]
fn an_event_carries_any_json_as_data_and_needs_it() {
    let limits = DocLimits::default();
    for (text, want) in [
        (r#"{"type":"event","data":{"a": [1, 2]}}"#, r#"{"a":[1,2]}"#),
        (r#"{"type":"event","data":null}"#, "null"),
        (r#"{"type":"event","data":"hi"}"#, r#""hi""#),
    ] {
        match parse(text, &limits) {
            Ok(ClientMessage::Event(d)) => assert_eq!(d, want),
            other => panic!("{text}: {other:?}"),
        }
    }
    let refused = parse(r#"{"type":"event"}"#, &limits).unwrap_err();
    assert_eq!(refused.code, "invalid");
}
