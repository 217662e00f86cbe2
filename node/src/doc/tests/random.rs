//! Random patches, checked against the reference model after each one.

use serde_json::json;
use serde_json::Value;

use crate::doc::model::{self, Model};

use super::*;

/// Deterministic pseudo-random numbers (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

fn random_value(r: &mut Lcg, depth: usize) -> Value {
    const STRS: [&str; 5] = ["", "é", "a\"b\\c", "\u{1}\n\t", "✓ done"];
    const NUMS: [f64; 5] = [0.1, -0.0, 1e300, 123456.789, -2.5e-8];
    match r.below(if depth == 0 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => json!(r.below(2) == 0),
        2 => json!(r.below(1 << 30) as i64 - (1 << 29)),
        3 => json!(NUMS[r.below(5)]),
        4 => json!(u64::MAX - r.below(9) as u64),
        5 | 6 => json!(STRS[r.below(5)]),
        7 => Value::Array(
            (0..r.below(4))
                .map(|_| random_value(r, depth - 1))
                .collect(),
        ),
        _ => Value::Object(random_props(r, depth - 1)),
    }
}

fn random_props(r: &mut Lcg, depth: usize) -> Props {
    // `q"` sorts before `q#` but its escaped text `q\"` after: names are
    // kept in the order of the names, not of their JSON.
    const NAMES: [&str; 9] = ["x", "y", "fill", "név", "q\"", "q#", "\u{7}", "a\\", "~"];
    let n = r.below(4);
    (0..n)
        .map(|_| (NAMES[r.below(9)].to_owned(), random_value(r, depth)))
        .collect()
}

#[test]
fn serialized_len_matches_over_random_ops() {
    let mut r = Lcg(42);
    let mut d = Document::new();
    let mut model = Model::new();
    let (mut applied, mut rejected) = (0, 0);
    for round in 0..400 {
        let patch: Vec<Op> = (0..1 + r.below(5))
            .map(|_| {
                let id = ["a", "b", "c", "d-1", "E_2"][r.below(5)].to_owned();
                match r.below(5) {
                    0 => Op::Delete { id },
                    1 => Op::Put {
                        id,
                        props: random_props(&mut r, 3),
                    },
                    _ => Op::Set {
                        id,
                        props: random_props(&mut r, 3),
                    },
                }
            })
            .collect();
        // Some patches get a tight limit so rollbacks are exercised too.
        let mut limits = lim();
        if r.below(4) == 0 {
            limits.max_doc_bytes = d.charged_len() + r.below(40);
        }
        let before = d.to_json();
        match d.apply(&patch, &limits) {
            Ok(()) => {
                applied += patch.len();
                model::apply(&mut model, &patch);
            }
            Err(e) => {
                assert_eq!(e.code(), "too-large");
                assert_eq!(d.to_json(), before);
                rejected += 1;
            }
        }
        assert_eq!(d.serialized_len(), d.to_json().len(), "round {round}");
        assert_eq!(d.to_json(), model::json(&model), "round {round}");
        assert_eq!(d.charged_len(), model::charged(&model), "round {round}");
        if round % 50 == 0 {
            let back = Document::from_json(d.to_json().as_bytes(), &lim()).unwrap();
            assert_eq!(back.to_json(), d.to_json());
        }
    }
    assert!(applied > 300 && rejected > 10, "{applied} {rejected}");
}
