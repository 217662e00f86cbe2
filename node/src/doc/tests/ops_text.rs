//! `parse_ops_text`: the same answers as parsing the whole `ops` value, one op at a time.

use super::*;

/// What parsing the whole value says: the ops and their compact text, or the refusal.
fn whole(text: &str, limits: &DocLimits) -> Result<(Vec<Op>, String), Option<String>> {
    let value: Value = serde_json::from_str(text).map_err(|_| None)?;
    match parse_ops(&value, limits) {
        Ok(ops) => Ok((ops, value.to_string())),
        Err(e) => Err(Some(format!("{} {e:?}", e.code()))),
    }
}

fn one_at_a_time(text: &str, limits: &DocLimits) -> Result<(Vec<Op>, String), Option<String>> {
    parse_ops_text(text, limits).map_err(|e| match e {
        OpsError::NotJson => None,
        OpsError::Patch(e) => Some(format!("{} {e:?}", e.code())),
    })
}

#[test]
fn answers_as_the_whole_value_does() {
    let limits = DocLimits {
        max_ops: 3,
        ..lim()
    };
    let cases = [
        r#"[{"op":"put","id":"a","props":{"x":1,"y":[1,2.5,"s"],"n":null}}]"#,
        r#"[ {"op":"set","id":"a","props":{"w":1e3}} , {"op":"delete","id":"b"} ]"#,
        r#"[]"#,
        r#"[{"op":"put","id":"a","props":{}},{"op":"put","id":"b","props":{}},{"op":"delete","id":"c"},{"op":"delete","id":"d"}]"#,
        r#"[{"op":"put","id":"a","props":{}}, [0,0,0], {"op":"nope"}]"#,
        r#"[{"op":"put","id":"bad id!","props":{}}]"#,
        r#"[{"op":"put","id":"a","props":{},"extra":1}]"#,
        r#"{"op":"put","id":"a","props":{}}"#,
        r#""ops""#,
        r#"12"#,
        r#"null"#,
        r#"true"#,
        r#"[{"op":"put","id":"a","props":{}}"#,
        r#"[1,]"#,
        r#"[{"op":"put","id":"a","props":{"s":"\u00e9\n"}}]"#,
    ];
    for text in cases {
        assert_eq!(one_at_a_time(text, &limits), whole(text, &limits), "{text}");
    }
}

/// A patch whose first op is not one is refused before the rest is made into values: what
/// the parse holds is a pointer per op and that op (about 23 KB, of a 60 KB text), not the
/// 30,000 values of the whole (1.6 MB).
#[test]
fn a_bad_first_op_is_refused_before_the_rest_is_built() {
    let text = format!(
        "[{}]",
        vec![format!("[{}0]", "0,".repeat(149)); 200].join(",")
    );
    assert!(text.len() > 60_000);
    let ((), whole_peak) = crate::allocator::counting::peak_of(|| {
        let value: Value = serde_json::from_str(&text).unwrap();
        assert!(parse_ops(&value, &lim()).is_err());
    });
    let ((), peak) = crate::allocator::counting::peak_of(|| {
        assert!(matches!(
            parse_ops_text(&text, &lim()),
            Err(OpsError::Patch(PatchError::Invalid(_)))
        ));
    });
    assert!(
        peak < 32 * 1024,
        "held {peak} bytes at most (the whole value: {whole_peak})"
    );
    assert!(whole_peak > 500_000, "{whole_peak}");
}
