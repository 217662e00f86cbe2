//! A document's (or a delta's) nodes read straight from its compact JSON, in id order,
//! without building a map: each id and the text of its value, borrowed from the text.
//!
//! Saving, reading and comparing versions used to parse each document into a map of
//! owned ids and props, which costs far more than the text for documents of many small
//! nodes (a 2.2 MB document of 200,000 empty nodes took 57 MB to save as a delta). The
//! texts the history works on are written in id order (the room's document and every
//! version rebuilt here), so two of them are compared by walking both at once.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde::de::IgnoredAny;

/// One node: its id (unescaped) and its value's JSON text.
pub type Entry<'a> = (Cow<'a, str>, &'a str);

/// The nodes of a JSON object's text, in the order written.
pub struct Entries<'a> {
    text: &'a str,
    pos: usize,
    started: bool,
    done: bool,
}

/// The entries of `text` in id order: walked in place when the text is in order (always,
/// for what the node writes), else gathered and sorted. An error when `text` is not a
/// JSON object or names a node twice.
pub fn in_order(text: &str) -> Result<Sorted<'_>, String> {
    serde_json::from_str::<IgnoredAny>(text).map_err(|e| format!("not a document: {e}"))?;
    if !text.trim_start().starts_with('{') {
        return Err("not a document: not an object".into());
    }
    let mut last: Option<Cow<'_, str>> = None;
    let mut ordered = true;
    for entry in Entries::new(text) {
        let (id, _) = entry?;
        if let Some(prev) = &last {
            match prev.as_ref().cmp(id.as_ref()) {
                Ordering::Less => {}
                Ordering::Equal => return Err(format!("node {id:?} named twice")),
                Ordering::Greater => ordered = false,
            }
        }
        last = Some(id);
    }
    if ordered {
        return Ok(Sorted::Walked(Entries::new(text)));
    }
    let mut all = Entries::new(text).collect::<Result<Vec<_>, _>>()?;
    all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if all.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err("a node named twice".into());
    }
    Ok(Sorted::Gathered(all.into_iter()))
}

/// A node of two documents walked side by side (see [`side_by_side`]).
pub enum Side<'a> {
    /// Only in the first.
    Gone(Cow<'a, str>),
    /// Only in the second, with its value.
    New(Cow<'a, str>, &'a str),
    /// In both: its value in each.
    Both(Cow<'a, str>, &'a str, &'a str),
}

/// The nodes of `from` and `to` together in id order, each once.
pub fn side_by_side<'a>(
    from: &'a str,
    to: &'a str,
) -> Result<impl Iterator<Item = Side<'a>>, String> {
    let (mut a, mut b) = (in_order(from)?.peekable(), in_order(to)?.peekable());
    Ok(std::iter::from_fn(move || {
        let step = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some((x, _)), Some((y, _))) => x.as_ref().cmp(y.as_ref()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
        };
        Some(match step {
            Ordering::Less => Side::Gone(a.next()?.0),
            Ordering::Greater => {
                let (id, new) = b.next()?;
                Side::New(id, new)
            }
            Ordering::Equal => {
                let ((_, old), (id, new)) = (a.next()?, b.next()?);
                Side::Both(id, old, new)
            }
        })
    }))
}

/// Entries in id order (see [`in_order`]).
pub enum Sorted<'a> {
    Walked(Entries<'a>),
    Gathered(std::vec::IntoIter<Entry<'a>>),
}

impl<'a> Iterator for Sorted<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        match self {
            // The text was checked whole by `in_order`, so walking it again cannot fail.
            Sorted::Walked(e) => e.next().and_then(Result::ok),
            Sorted::Gathered(g) => g.next(),
        }
    }
}

impl<'a> Entries<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            pos: 0,
            started: false,
            done: false,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while self
            .bytes()
            .get(self.pos)
            .is_some_and(u8::is_ascii_whitespace)
        {
            self.pos += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        self.skip_space();
        if self.bytes().get(self.pos) == Some(&b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "not a document: expected {:?} at {}",
                b as char, self.pos
            ))
        }
    }

    /// A string starting at `pos` (its opening quote): the text between the quotes.
    fn string(&mut self) -> Result<&'a str, String> {
        self.expect(b'"')?;
        let start = self.pos;
        let bytes = self.bytes();
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Ok(&self.text[start..self.pos - 1]);
                }
                _ => self.pos += 1,
            }
        }
        Err("not a document: a string does not end".into())
    }

    /// A value starting at `pos`: its text.
    fn value(&mut self) -> Result<&'a str, String> {
        self.skip_space();
        let start = self.pos;
        let bytes = self.bytes();
        let mut depth = 0usize;
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b'"' => {
                    self.string()?;
                    if depth == 0 {
                        break;
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => break,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        break;
                    }
                }
                b',' if depth == 0 => break,
                _ => {}
            }
            self.pos += 1;
        }
        let text = self.text[start..self.pos].trim_end();
        if text.is_empty() || depth > 0 {
            return Err("not a document: a value does not end".into());
        }
        Ok(text)
    }

    fn entry(&mut self) -> Result<Option<Entry<'a>>, String> {
        if !self.started {
            self.started = true;
            self.expect(b'{')?;
            self.skip_space();
            if self.bytes().get(self.pos) == Some(&b'}') {
                return Ok(None);
            }
        } else {
            self.skip_space();
            match self.bytes().get(self.pos) {
                Some(b'}') => return Ok(None),
                Some(b',') => self.pos += 1,
                _ => return Err("not a document: expected ',' or '}'".into()),
            }
        }
        let raw = self.string()?;
        let id = match raw.contains('\\') {
            false => Cow::Borrowed(raw),
            true => Cow::Owned(
                serde_json::from_str::<String>(&format!("\"{raw}\""))
                    .map_err(|e| format!("not a document: {e}"))?,
            ),
        };
        self.expect(b':')?;
        Ok(Some((id, self.value()?)))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.entry() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// What a document's text counts against the document limits: its bytes, each node as at
/// least [`MIN_NODE_BYTES`](crate::doc::MIN_NODE_BYTES) (what the memory of many tiny nodes
/// takes is per node, not per byte). An error when it is not a document.
pub fn charged_len(text: &str) -> Result<usize, String> {
    let mut shortfall = 0usize;
    for entry in Entries::new(text) {
        let (id, value) = entry?;
        let json_len = id.len() + 3 + value.len();
        shortfall += crate::doc::MIN_NODE_BYTES.saturating_sub(json_len);
    }
    Ok(text.len() + shortfall)
}

/// Writes a JSON object of entries, in the order given: the inverse of [`in_order`].
#[derive(Default)]
pub struct Writer {
    out: String,
    any: bool,
}

impl Writer {
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            out: String::with_capacity(bytes),
            any: false,
        }
    }

    pub fn push(&mut self, id: &str, value: &str) {
        self.out.push(if self.any { ',' } else { '{' });
        self.any = true;
        match id.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            false => {
                self.out.push('"');
                self.out.push_str(id);
                self.out.push('"');
            }
            true => self
                .out
                .push_str(&serde_json::to_string(id).expect("a string serializes")),
        }
        self.out.push(':');
        self.out.push_str(value);
    }

    pub fn finish(mut self) -> String {
        self.out.push_str(if self.any { "}" } else { "{}" });
        self.out.shrink_to_fit();
        self.out
    }
}
