//! Scanning a stored props object member by member, without parsing it.

/// One `"name":value` of a stored props object, as written.
pub(super) struct Member<'a> {
    pub(super) raw: &'a str,
    /// The name's JSON string, quotes included.
    quoted: &'a str,
}

impl Member<'_> {
    /// The name itself: the text between the quotes unless it has escapes.
    pub(super) fn name(&self) -> std::borrow::Cow<'_, str> {
        let inner = &self.quoted[1..self.quoted.len() - 1];
        match inner.contains('\\') {
            false => inner.into(),
            true => serde_json::from_str::<String>(self.quoted)
                .expect("stored names are valid JSON strings")
                .into(),
        }
    }
}

/// The members of a compact JSON object written by `serde_json` (no
/// whitespace, valid by construction), found by scanning, not parsing.
pub(super) struct Members<'a> {
    text: &'a str,
    /// The `{` or `,` before the next member, or the closing `}`.
    at: usize,
}

impl<'a> Members<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Members { text, at: 0 }
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        let b = self.text.as_bytes();
        if b[self.at] == b'}' || b[self.at + 1] == b'}' {
            return None;
        }
        let start = self.at + 1;
        let name_end = string_end(b, start) + 1;
        let end = value_end(b, name_end + 1);
        self.at = end;
        Some(Member {
            raw: &self.text[start..end],
            quoted: &self.text[start..name_end],
        })
    }
}

/// Index of the quote closing the JSON string whose opening quote is at `at`.
fn string_end(b: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    loop {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
}

/// Index of the `,` or `}` that ends the value starting at `at`.
fn value_end(b: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    loop {
        match b[i] {
            b'"' => i = string_end(b, i),
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return i,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
}
