//! The hello: the socket's token or link key, its client id, where it resumes,
//! and a guest's name, made plain text.

use super::fields::{field, Fields};
use super::{Hello, Refusal, MAX_NAME_CHARS};
use crate::ids::is_valid_id;

pub(super) fn parse_hello(fields: &Fields<'_>) -> Result<Hello, Refusal> {
    let bad = |m: String| Refusal::invalid(None, m);
    let token: Option<String> = field(fields, "token").map_err(bad)?;
    let key: Option<String> = field(fields, "key").map_err(bad)?;
    let client: String = field(fields, "client")
        .map_err(bad)?
        .ok_or_else(|| bad("hello needs a `client` id".into()))?;
    if !is_valid_id(&client) {
        return Err(bad("`client` must match [A-Za-z0-9_-]{1,64}".into()));
    }
    let since: Option<u64> = field(fields, "since")
        .map_err(|_| bad("`since` must be a version number or null".into()))?;
    let name: Option<String> = field(fields, "name").map_err(bad)?;
    let name = name.map(|n| clean_name(&n));
    Ok(Hello {
        token: token.filter(|t| !t.is_empty()),
        key: key.filter(|k| !k.is_empty()),
        client,
        since,
        name,
    })
}

/// A guest name as plain text: at most 64 characters, with no control characters and
/// nothing invisible that could change how other names look (bidi overrides and
/// isolates, zero-width characters, fillers), and runs of spaces made one space. A
/// guest must not be able to look like someone else.
pub fn clean_name(name: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in name.chars() {
        if c.is_control() || is_invisible(c) {
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out.chars()
        .take(MAX_NAME_CHARS)
        .collect::<String>()
        .trim_end()
        .to_owned()
}

/// Characters a name or a description typed over HTTP may not hold, since they could make
/// it look like another: direction controls (embeddings, overrides, isolates, marks),
/// zero-width spaces and no-breaks, line and paragraph separators, the soft hyphen and the
/// invisible operators, annotation marks (which hide text), and the fillers and blanks that
/// print as nothing. Joiners (ZWNJ, ZWJ), variation selectors and tags are not among them:
/// scripts and emoji need them ([`is_shaping`]; a name must have more than those).
pub fn is_deceptive(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180E}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1D173}'..='\u{1D17A}'
    )
}

/// Characters that shape the ones around them and print as nothing alone: joiners,
/// variation selectors, tags. Allowed in a name, but a name of nothing else is blank.
pub fn is_shaping(c: char) -> bool {
    matches!(
        c,
        '\u{180B}'..='\u{180D}'
            | '\u{180F}'
            | '\u{200C}'
            | '\u{200D}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// Format characters (Unicode category Cf) and other characters that print as
/// nothing, dropped from a guest's name: what [`is_deceptive`] refuses in typed names (but
/// the braille blank), and also joiners, the Mongolian selectors, tags and the prepended
/// concatenation marks (a guest name is cleaned, not refused, so it loses them all).
fn is_invisible(c: char) -> bool {
    (is_deceptive(c) && c != '\u{2800}')
        || matches!(
            c,
            '\u{0600}'..='\u{0605}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{180B}'..='\u{180D}'
                | '\u{180F}'
                | '\u{200C}'
                | '\u{200D}'
                | '\u{2065}'
                | '\u{E0000}'..='\u{E007F}'
        )
}
