//! The highest op id per client and file, what a resuming client is told it has.

use super::support::{append_one, new_file, op, patch, take};
use crate::ids::FileId;
use crate::store::Store;

/// The highest op id per client and file is kept with its version, whatever order
/// the patches came in.
pub async fn client_op_keeps_the_highest(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let (_, other) = new_file(store).await;
    let epoch = take(store, &file).await;
    let other_epoch = take(store, &other).await;
    assert_eq!(op(store, &file, 1).await, None);

    let mixed = vec![
        patch(1, 1, 5),
        patch(2, 2, 1),
        patch(3, 1, 3),
        patch(4, 2, 2),
    ];
    append_one(store, &file, epoch, mixed)
        .await
        .expect("append");
    assert_eq!(op(store, &file, 1).await, Some((5, 1)));
    assert_eq!(op(store, &file, 2).await, Some((2, 4)));

    append_one(store, &file, epoch, vec![patch(5, 1, 4)])
        .await
        .expect("a lower op id");
    assert_eq!(
        op(store, &file, 1).await,
        Some((5, 1)),
        "a lower op id never replaces a higher one"
    );
    append_one(store, &file, epoch, vec![patch(6, 1, 9)])
        .await
        .expect("a higher op id");
    assert_eq!(op(store, &file, 1).await, Some((9, 6)));

    // Per file: the same client elsewhere is counted apart.
    append_one(store, &other, other_epoch, vec![patch(1, 1, 2)])
        .await
        .expect("other file");
    assert_eq!(op(store, &other, 1).await, Some((2, 1)));
    assert_eq!(op(store, &file, 1).await, Some((9, 6)));
    assert_eq!(op(store, &file, 3).await, None);
    assert_eq!(op(store, &FileId::generate(), 1).await, None);
}
