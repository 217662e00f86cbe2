use std::mem::size_of;

/// The size of the future an async fn of five arguments returns.
fn future_size<F, A, B, C, D, E, Fut>(_: &F) -> usize
where
    F: Fn(A, B, C, D, E) -> Fut,
{
    size_of::<Fut>()
}

/// Every open socket holds one `serve` future for its whole life, sized for its largest
/// state. The join and a token refresh (large, once or rarely) are boxed while they run so
/// that the socket's steady state does not pay for them: before, the future was 7.3 KiB,
/// half of an idle socket's memory.
#[test]
fn a_socket_task_stays_small() {
    let size = future_size(&super::serve);
    assert!(size <= 3 * 1024, "a socket's task is {size} bytes");
}
