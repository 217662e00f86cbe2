//! Patches and presence updates, checked against the contract and the limits.

use super::fields::{number_text, pair, Fields};
use super::{Patch, PresenceUpdate, Refusal, MAX_SELECTION};
use crate::doc::{parse_ops_text, DocLimits, OpsError, PatchError};
use crate::ids::is_valid_id;

pub(super) fn patch_id(fields: &Fields<'_>) -> Option<u64> {
    fields
        .get("id")
        .and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok())
        .filter(|id| *id > 0)
}

pub(super) fn parse_patch(fields: &Fields<'_>, limits: &DocLimits) -> Result<Patch, Refusal> {
    let Some(id) = patch_id(fields) else {
        return Err(Refusal::invalid(
            None,
            "a patch needs `id`, a positive integer",
        ));
    };
    let t = number_text(fields, "t").map_err(|m| Refusal::invalid(Some(id), m))?;
    let raw_ops = fields
        .get("ops")
        .ok_or_else(|| Refusal::invalid(Some(id), "a patch needs `ops`"))?;
    let (ops, ops_json) = parse_ops_text(raw_ops.get(), limits).map_err(|e| match e {
        OpsError::NotJson => Refusal::invalid(Some(id), "`ops` is not valid JSON"),
        OpsError::Patch(e) => Refusal {
            id: Some(id),
            code: e.code(),
            message: match e {
                PatchError::Invalid(m) | PatchError::TooLarge(m) => m,
            },
        },
    })?;
    // Everyone else gets the ops as the node writes them, which can be longer than
    // what came (`1e15` is written `1000000000000000.0`): a relay may not be larger
    // than what its sender sent, give or take a little.
    let sent = raw_ops.get().len();
    if ops_json.len() > sent + sent / 8 + 64 {
        return Err(Refusal {
            id: Some(id),
            code: "too-large",
            message: "`ops` written out is much longer than sent: write numbers without \
                      exponents"
                .into(),
        });
    }
    Ok(Patch {
        id,
        ops,
        ops_json,
        t,
    })
}

/// The most text a valid `sel` can take: 100 quoted ids of 64 characters and their commas,
/// with room for spaces.
const MAX_SELECTION_TEXT: usize = 16 * 1024;

pub(super) fn parse_presence(fields: &Fields<'_>) -> Result<PresenceUpdate, String> {
    let page = match fields.get("page") {
        None => None,
        Some(raw) => {
            let page: Option<String> = serde_json::from_str(raw.get())
                .map_err(|_| "`page` must be an id or null".to_owned())?;
            if page.as_deref().is_some_and(|p| !is_valid_id(p)) {
                return Err("`page` must be an id".into());
            }
            Some(page)
        }
    };
    let sel = match fields.get("sel") {
        None => None,
        // The longest `sel` there can be is 100 ids of 64 characters: a longer text is refused
        // before it is parsed into a list (a megabyte of short strings is ten in memory).
        Some(raw) if raw.get().len() > MAX_SELECTION_TEXT => {
            return Err(format!("`sel` holds at most {MAX_SELECTION} ids"));
        }
        Some(raw) => {
            let sel: Option<Vec<String>> = serde_json::from_str(raw.get())
                .map_err(|_| "`sel` must be a list of ids or null".to_owned())?;
            if let Some(ids) = &sel {
                if ids.len() > MAX_SELECTION {
                    return Err(format!("`sel` holds at most {MAX_SELECTION} ids"));
                }
                if !ids.iter().all(|i| is_valid_id(i)) {
                    return Err("`sel` must hold ids".into());
                }
            }
            Some(sel)
        }
    };
    Ok(PresenceUpdate {
        page,
        cursor: pair::<2>(fields, "cursor")?,
        sel,
        camera: pair::<3>(fields, "camera")?,
        t: number_text(fields, "t")?,
        wire_bytes: 0,
    })
}
