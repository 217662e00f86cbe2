//! Memory of a loaded document: heap bytes held by a
//! `Document` per byte of its compact JSON.
//!
//! A counting global allocator (this test binary only) records every live
//! allocation twice: the bytes asked for, and the bytes the allocator really
//! sets aside (glibc's `malloc_usable_size` plus its 8-byte chunk header),
//! which is what resident memory pays. The bounds are asserted on the second.
//! Byte counts are deterministic, so they are asserted; nothing is timed.
//!
//! `cargo test -p atrium-node --test doc_memory -- --nocapture` prints one
//! `FIGURE {json}` line per document; docs/scaling.md tables them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use atrium_node::doc::{DocLimits, Document, MIN_NODE_BYTES};
use serde_json::json;

struct Counting;

/// Live bytes asked for, live bytes really set aside, and the peak of the latter.
static ASKED: AtomicUsize = AtomicUsize::new(0);
static REAL: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// glibc keeps an 8-byte size header in front of every chunk.
const CHUNK_HEADER: usize = 8;

fn real_size(ptr: *mut u8) -> usize {
    // SAFETY: `ptr` is a live block from the system allocator (glibc malloc).
    unsafe { libc::malloc_usable_size(ptr.cast()) + CHUNK_HEADER }
}

fn added(ptr: *mut u8, asked: usize) {
    if ptr.is_null() {
        return;
    }
    ASKED.fetch_add(asked, Ordering::Relaxed);
    let now = REAL.fetch_add(real_size(ptr), Ordering::Relaxed) + real_size(ptr);
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn removed(ptr: *mut u8, asked: usize) {
    ASKED.fetch_sub(asked, Ordering::Relaxed);
    REAL.fetch_sub(real_size(ptr), Ordering::Relaxed);
}

// SAFETY: every call is passed straight to `System`; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        added(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        added(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        removed(ptr, layout.size());
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        removed(ptr, layout.size());
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            // The old block is still live.
            added(ptr, layout.size());
        } else {
            added(p, new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What loading one JSON text cost.
struct Load {
    json: usize,
    /// The size the document limit counts (`Document::charged_len`).
    charged: usize,
    nodes: usize,
    asked: usize,
    real: usize,
    peak: usize,
}

fn load(json: &str) -> (Document, Load) {
    let limits = DocLimits {
        max_doc_bytes: usize::MAX,
        max_node_bytes: usize::MAX,
        ..DocLimits::default()
    };
    let (asked0, real0) = (ASKED.load(Ordering::SeqCst), REAL.load(Ordering::SeqCst));
    PEAK.store(real0, Ordering::SeqCst);
    let doc = Document::from_json(json.as_bytes(), &limits).expect("a valid document");
    let load = Load {
        json: json.len(),
        charged: doc.charged_len(),
        nodes: doc.node_count(),
        asked: ASKED.load(Ordering::SeqCst) - asked0,
        real: REAL.load(Ordering::SeqCst) - real0,
        peak: PEAK.load(Ordering::SeqCst) - real0,
    };
    assert_eq!(
        doc.serialized_len(),
        json.len(),
        "the input is compact JSON"
    );
    (doc, load)
}

fn figure(name: &str, l: &Load) {
    let per = |b: usize| (b as f64 / l.json as f64 * 100.0).round() / 100.0;
    let line = json!({
        "doc": name, "json_bytes": l.json, "charged_bytes": l.charged, "nodes": l.nodes,
        "heap_asked_bytes": l.asked, "heap_real_bytes": l.real, "peak_real_bytes": l.peak,
        "asked_per_json_byte": per(l.asked), "real_per_json_byte": per(l.real),
        "peak_per_json_byte": per(l.peak),
        "real_per_charged_byte": (l.real as f64 / l.charged as f64 * 100.0).round() / 100.0,
    });
    eprintln!("FIGURE {line}");
}

/// Deterministic pseudo-random numbers (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A coordinate as a design tool stores it: two decimals at most.
    fn coord(&mut self, span: u64) -> String {
        let v = self.below(span * 100) as f64 / 100.0 - (span / 4) as f64;
        serde_json::to_string(&v).unwrap()
    }
}

/// A design file of about 8 MiB: 40 pages and tens of thousands of shapes
/// with ten props each (x, y, w, h, fill, stroke, name, rotation, page,
/// type), keys in name order as the document writes them.
fn design_doc() -> String {
    const KINDS: [&str; 5] = ["rect", "ellipse", "text", "frame", "vector"];
    let mut r = Lcg(7);
    let mut out = String::from("{");
    let mut entries = Vec::new();
    for p in 0..40 {
        entries.push(format!(
            r##""page-{p:02}":{{"background":"#f5f5f5","name":"Page {p}","order":{p},"type":"page"}}"##
        ));
    }
    let mut n = 0u64;
    let mut total = 0;
    while total < 8 << 20 {
        let kind = KINDS[r.below(5) as usize];
        let rotation = match r.below(4) {
            0 => r.coord(360),
            _ => "0".to_owned(),
        };
        entries.push(format!(
            r##""shape-{n:08x}":{{"fill":"#{:06x}","h":{},"name":"{kind} {n}","page":"page-{:02}","rotation":{rotation},"stroke":"#{:06x}","type":"{kind}","w":{},"x":{},"y":{}}}"##,
            r.below(1 << 24),
            r.coord(800),
            r.below(40),
            r.below(1 << 24),
            r.coord(1200),
            r.coord(20000),
            r.coord(20000),
        ));
        total += entries.last().map_or(0, String::len);
        n += 1;
    }
    entries.sort();
    out.push_str(&entries.join(","));
    out.push('}');
    out
}

/// The worst shape for memory: empty nodes with the shortest ids there are
/// enough of, `"n1":{}` (three characters: 262,144 ids).
fn tiny_doc(nodes: usize) -> String {
    const CHARS: &[u8] = b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
    let mut ids: Vec<String> = (0..nodes)
        .map(|i| {
            let c = |k: usize| char::from(CHARS[(i >> (6 * k)) % 64]);
            [c(2), c(1), c(0)].into_iter().collect()
        })
        .collect();
    ids.sort();
    let body: Vec<String> = ids.iter().map(|id| format!("\"{id}\":{{}}")).collect();
    format!("{{{}}}", body.join(","))
}

/// A patch of 1,000 sets on one 4 MiB node: heap added while it applies,
/// at its peak (the node is rewritten once per patch, not once per op).
fn sets_on_a_large_node() -> (usize, usize) {
    let big = "p".repeat(4 << 20);
    let json = format!(r#"{{"big":{{"path":"{big}","x":0}}}}"#);
    let (mut doc, _) = load(&json);
    let ops: Vec<_> = (0..1000)
        .map(|i| json!({"op": "set", "id": "big", "props": {"x": i}}))
        .collect();
    let limits = DocLimits::default();
    let ops = atrium_node::doc::parse_ops(&serde_json::Value::Array(ops), &limits).unwrap();
    let real0 = REAL.load(Ordering::SeqCst);
    PEAK.store(real0, Ordering::SeqCst);
    doc.apply(&ops, &limits).unwrap();
    let peak = PEAK.load(Ordering::SeqCst) - real0;
    assert!(doc.to_json().ends_with(r#","x":999}}"#));
    (json.len(), peak)
}

#[test]
fn document_memory_per_json_byte() {
    let json = design_doc();
    let (doc, design) = load(&json);
    figure("design", &design);
    assert_eq!(
        doc.to_json(),
        json,
        "a design document round-trips byte for byte"
    );
    drop(doc);

    let json = tiny_doc(200_000);
    let (doc, tiny) = load(&json);
    figure("tiny", &tiny);
    drop(doc);

    // The worst shape for parsing: nodes of small numbers, each at the node limit. A node
    // is parsed alone (about 30 times its text while it is), so the peak is the document
    // plus one node's parse, however large the document.
    let max_node = DocLimits::default().max_node_bytes;
    let numbers = |n: usize| format!(r#""n{n}":{{"a":[{}0]}}"#, "0,".repeat(max_node / 2 - 16));
    let json = format!("{{{}}}", (0..16).map(numbers).collect::<Vec<_>>().join(","));
    let (doc, arrays) = load(&json);
    figure(
        "arrays of small numbers, 16 nodes at the node limit",
        &arrays,
    );
    drop(doc);

    let (node, peak) = sets_on_a_large_node();
    eprintln!(
        "FIGURE {}",
        json!({"doc": "1,000 sets on one node", "json_bytes": node, "peak_real_bytes": peak})
    );

    // The realistic document: at most 4 bytes in memory per byte of JSON.
    assert!(
        design.real <= 4 * design.json,
        "a design document takes {} bytes for {} bytes of JSON",
        design.real,
        design.json
    );
    // The worst case is bounded through the size limit, which counts each
    // node as at least `MIN_NODE_BYTES`: at most 4 bytes per counted byte.
    assert_eq!(tiny.charged, tiny.json + (MIN_NODE_BYTES - 8) * tiny.nodes);
    assert!(
        tiny.real <= 4 * tiny.charged,
        "tiny nodes take {} bytes for {} counted bytes",
        tiny.real,
        tiny.charged
    );
    assert!(
        arrays.peak <= 2 * arrays.json + 40 * max_node,
        "building {} bytes of number arrays peaked at {} bytes",
        arrays.json,
        arrays.peak
    );
    // The old node (kept for undo), a buffer and the new one: a few times the
    // node, never once per op.
    assert!(
        peak <= 4 * node,
        "1,000 sets on a {node}-byte node took {peak} bytes at the peak"
    );
}
