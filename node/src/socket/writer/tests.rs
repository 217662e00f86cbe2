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
