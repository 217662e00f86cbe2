use super::*;

fn frames(count: usize, each: usize) -> Vec<Bytes> {
    (0..count).map(|_| frame::text(&vec![b'x'; each])).collect()
}

#[tokio::test]
async fn the_gathering_buffer_shrinks_back_after_a_large_batch() {
    let mut io: WriteIo = Box::new(tokio::io::sink());
    let mut gather = Vec::new();
    // A large batch (under GATHER, so gathered) grows the buffer...
    let written = write_all(&mut io, &frames(40, 1000), &mut gather).await;
    assert!(written.unwrap() > 40_000);
    // ...small ones after it must not keep it.
    for _ in 0..3 {
        write_all(&mut io, &frames(3, 100), &mut gather)
            .await
            .unwrap();
    }
    assert!(gather.capacity() <= GATHER_KEEP, "{}", gather.capacity());
}

#[tokio::test]
async fn small_batches_reuse_the_buffer() {
    let mut io: WriteIo = Box::new(tokio::io::sink());
    let mut gather = Vec::new();
    write_all(&mut io, &frames(3, 100), &mut gather)
        .await
        .unwrap();
    let kept = gather.as_ptr();
    write_all(&mut io, &frames(2, 120), &mut gather)
        .await
        .unwrap();
    assert_eq!(gather.as_ptr(), kept);
}

/// The frame `framed` makes of `out`, in one buffer.
async fn framed_one(out: Out, deflate: bool, metrics: &crate::metrics::Metrics) -> Vec<u8> {
    let mut pieces = Vec::new();
    framed(out, deflate, metrics, &mut pieces).await;
    pieces.concat()
}

/// A large message is compressed on the bulk lane, once: a second socket takes it ready.
/// A small one, or one for a socket without deflate, is framed here.
#[tokio::test]
async fn a_large_message_is_compressed_on_the_lane_once() {
    let metrics = crate::metrics::Metrics::new();
    let big = crate::outbox::shared("x".repeat(200_000));
    let before = metrics.lane_runs.get();
    let first = framed_one(Out::Message(big.clone()), true, &metrics).await;
    assert_eq!(
        metrics.lane_runs.get(),
        before + 1,
        "compressed on the lane"
    );
    assert!(first.len() < 10_000, "{} bytes", first.len());
    let second = framed_one(Out::Message(big.clone()), true, &metrics).await;
    assert_eq!(second, first);
    let plain = framed_one(Out::Message(big), false, &metrics).await;
    assert!(plain.len() > 200_000);
    let small = crate::outbox::shared("y".repeat(1000));
    framed_one(Out::Message(small), true, &metrics).await;
    assert_eq!(
        metrics.lane_runs.get(),
        before + 1,
        "nothing else went to the lane"
    );
}

/// A large document shared by many welcomes is compressed on the lane once; each welcome's
/// small head is then compressed where it is written.
#[tokio::test]
async fn a_shared_document_is_compressed_on_the_lane_once_for_every_welcome() {
    use crate::ws::{Middle, Spliced};
    let metrics = crate::metrics::Metrics::new();
    let doc = Middle::new("x".repeat(200_000), None);
    let welcome = |you: &'static str| Out::from(Spliced::new(you.into(), doc.clone(), "}"));
    let before = metrics.lane_runs.get();
    let first = framed_one(welcome("{\"you\":\"a\",\"doc\":"), true, &metrics).await;
    assert_eq!(metrics.lane_runs.get(), before + 1);
    assert!(first.len() < 10_000, "{} bytes", first.len());
    let second = framed_one(welcome("{\"you\":\"b\",\"doc\":"), true, &metrics).await;
    assert_eq!(metrics.lane_runs.get(), before + 1, "taken ready");
    assert_eq!(first.len(), second.len());
    let plain = framed_one(welcome("{\"doc\":"), false, &metrics).await;
    assert_eq!(plain.len(), 10 + "{\"doc\":".len() + 200_000 + 1);
}
