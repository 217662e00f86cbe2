//! The hot paths of a message, each alone: parse a patch, apply it, and one
//! presence tick of a room of ten (everyone moved; each gets the other nine).
//!
//! `cargo bench -p atrium-node --bench hot_paths`. Figures and what they mean for
//! a node: docs/scaling.md ("Hot paths").

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use atrium_node::doc::{DocLimits, Document};
use atrium_node::ids::PersonId;
use atrium_node::metrics::Metrics;
use atrium_node::outbox::{outbox, ConnId, OutboxReceiver};
use atrium_node::protocol::{self, ClientMessage};
use atrium_node::room::presence::Board;

// What the node runs on (see atrium_node::allocator).
#[global_allocator]
static ALLOCATOR: atrium_node::allocator::Allocator = mimalloc::MiMalloc;

/// A patch as the load tool sends it: one shape moved and recoloured.
const PATCH: &str = r##"{"type":"patch","id":42,"ops":[{"op":"set","id":"r7","props":{"x":412.5,"y":96,"fill":"#3b82f6"}}]}"##;

fn moved(i: usize, round: u64) -> String {
    let x = (i as f64) * 13.5 + round as f64;
    format!(
        r#"{{"type":"presence","cursor":[{x},{:.1}],"sel":["r{i}"]}}"#,
        x / 2.0
    )
}

fn parse_patch(c: &mut Criterion) {
    let limits = DocLimits::default();
    let mut g = c.benchmark_group("patch");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse", |b| {
        b.iter(|| protocol::parse(black_box(PATCH), &limits).unwrap())
    });
    let Ok(ClientMessage::Patch(patch)) = protocol::parse(PATCH, &limits) else {
        panic!("the bench's patch does not parse");
    };
    g.bench_function("apply", |b| {
        b.iter_batched_ref(
            Document::new,
            |doc| doc.apply(black_box(&patch.ops), &limits).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn presence_tick(c: &mut Criterion) {
    const PEOPLE: usize = 10;
    let limits = DocLimits::default();
    let metrics = Metrics::new();
    let mut board = Board::default();
    let now = Instant::now();
    let mut receivers: Vec<OutboxReceiver> = Vec::new();
    let mut conns = Vec::new();
    for _ in 0..PEOPLE {
        let (tx, rx) = outbox(1024, 1 << 24, metrics.clone());
        let conn: ConnId = tx.id;
        board.join(conn, tx, PersonId::generate(), Some("page-1".into()), now);
        receivers.push(rx);
        conns.push(conn);
    }
    let mut g = c.benchmark_group("presence");
    g.throughput(Throughput::Elements(1));
    let one = moved(3, 7);
    g.bench_function("parse", |b| {
        b.iter(|| protocol::parse(black_box(&one), &limits).unwrap())
    });
    // What a tick delivers: nine entries to each of ten people.
    g.throughput(Throughput::Elements((PEOPLE * (PEOPLE - 1)) as u64));
    let mut round = 0u64;
    g.bench_function("tick of a room of 10, everyone moved", |b| {
        b.iter(|| {
            round += 1;
            for (i, &conn) in conns.iter().enumerate() {
                let text = moved(i, round);
                let Ok(ClientMessage::Presence(update)) = protocol::parse(&text, &limits) else {
                    panic!("the bench's presence does not parse");
                };
                board.update(conn, update, now);
            }
            board.start_round(Duration::ZERO, now, &metrics);
            while board.in_round() {
                board.serve_slice(now, &metrics);
            }
            for rx in &mut receivers {
                black_box(rx.drain_now());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, parse_patch, presence_tick);
criterion_main!(benches);
