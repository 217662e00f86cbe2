//! What a peer holds: the document from its welcome, then every relayed patch and ack.

use super::*;

impl Peer {
    /// Takes in a welcome: the whole document, or what happened since.
    pub(super) fn welcomed(&mut self, w: &Value) {
        let version = w["version"].as_u64().expect("welcome version");
        if let Some(resume) = w.get("resume").filter(|r| !r.is_null()) {
            assert!(
                self.welcomed_once,
                "a resume answered a hello without `since`: {w}"
            );
            for entry in resume.as_array().expect("resume is an array") {
                self.take(entry);
            }
            assert_eq!(
                self.version, version,
                "after its resume, peer {} is at {} but the welcome says {version}",
                self.label, self.version
            );
        } else {
            let doc = w["doc"].as_object().expect("welcome without doc or resume");
            assert!(
                version >= self.version,
                "peer {} of {} was at v{} and is welcomed back at v{version}: versions went back",
                self.label,
                self.file,
                self.version
            );
            self.doc = doc.clone();
            self.version = version;
        }
        self.welcomed_once = true;
    }

    /// Applies one relayed patch or ack (in a resume or live).
    pub(super) fn take(&mut self, m: &Value) {
        match s(&m["type"]) {
            "ack" => {
                let id = m["id"].as_u64().expect("ack id");
                let v = m["v"].as_u64().expect("ack v");
                if let Some(ops) = self.unacked.remove(&id) {
                    if v <= self.version {
                        // Already part of a whole document this client was given.
                    } else {
                        assert_eq!(
                            v,
                            self.version + 1,
                            "peer {} of {}: ack of op {id} at v{v} after v{} (a gap)",
                            self.label,
                            self.file,
                            self.version
                        );
                        apply_ops(&mut self.doc, &ops);
                        self.version = v;
                    }
                    self.acked.insert(id, v);
                } else {
                    // A second ack of a resent patch: it must name a known version.
                    assert!(
                        self.acked.contains_key(&id) && v <= self.version,
                        "peer {} of {}: unexpected ack {m}",
                        self.label,
                        self.file
                    );
                }
            }
            "patch" => {
                let v = m["v"].as_u64().expect("patch v");
                assert_eq!(
                    v,
                    self.version + 1,
                    "peer {} of {}: relayed v{v} after v{} (a gap or a repeat)",
                    self.label,
                    self.file,
                    self.version
                );
                apply_ops(&mut self.doc, m["ops"].as_array().expect("ops"));
                self.version = v;
            }
            "reject" => panic!("peer {} of {} got {m}", self.label, self.file),
            "notice" => {
                let code = m["code"].as_u64().unwrap_or(0);
                self.notices.push(code);
                self.met.lock().unwrap().notices.push(code);
            }
            _ => {}
        }
    }
}
