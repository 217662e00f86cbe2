//! The embedded files as served: each with its strong ETag, and the build id that
//! ties the page's asset URLs to this exact set of files.

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;
use hyper::header::HeaderValue;
use sha2::{Digest, Sha256};

use super::{FILES, INDEX};
use crate::http::strong_etag;

pub(super) struct Asset {
    pub(super) bytes: Bytes,
    pub(super) etag: HeaderValue,
    pub(super) content_type: &'static str,
}

pub(super) struct Assets {
    pub(super) build: String,
    pub(super) index: Asset,
    pub(super) files: HashMap<&'static str, Asset>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn asset(bytes: Bytes, content_type: &'static str) -> Asset {
    Asset {
        etag: strong_etag(&bytes),
        bytes,
        content_type,
    }
}

pub(super) fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let mut all = Sha256::new();
        for (path, bytes, _) in FILES {
            all.update((path.len() as u64).to_le_bytes());
            all.update(path.as_bytes());
            all.update((bytes.len() as u64).to_le_bytes());
            all.update(bytes);
        }
        let build = hex(&all.finalize()[..8]);
        let page = INDEX.replace("\"/assets/", &format!("\"/assets/{build}/"));
        Assets {
            index: asset(Bytes::from(page), "text/html; charset=utf-8"),
            files: FILES
                .iter()
                .map(|(path, bytes, ct)| (*path, asset(Bytes::from_static(bytes), ct)))
                .collect(),
            build,
        }
    })
}
