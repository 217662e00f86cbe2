//! A reference model of the document, to know what the server should hold.

use super::*;

pub fn apply_ops(doc: &mut Map<String, Value>, ops: &[Value]) {
    for op in ops {
        let id = s(&op["id"]).to_string();
        match s(&op["op"]) {
            "put" => {
                doc.insert(id, op["props"].clone());
            }
            "set" => {
                if let Some(Value::Object(node)) = doc.get_mut(&id) {
                    for (k, v) in op["props"].as_object().expect("props") {
                        if v.is_null() {
                            node.remove(k);
                        } else {
                            node.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "delete" => {
                doc.remove(&id);
            }
            other => panic!("unknown op {other}"),
        }
    }
}

pub fn put(id: &str, props: Value) -> Value {
    json!({"op": "put", "id": id, "props": props})
}

pub fn set(id: &str, props: Value) -> Value {
    json!({"op": "set", "id": id, "props": props})
}

pub fn delete(id: &str) -> Value {
    json!({"op": "delete", "id": id})
}

pub fn patch_msg(id: u64, ops: Vec<Value>) -> Value {
    json!({"type": "patch", "id": id, "ops": ops})
}
