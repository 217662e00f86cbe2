use super::*;

#[test]
fn signout_messages_carry_one_or_more_digests() {
    let one = [7u8; 32];
    assert_eq!(signout_digests(&one).collect::<Vec<_>>(), vec![one]);
    let two = [[1u8; 32], [2u8; 32]].concat();
    assert_eq!(
        signout_digests(&two).collect::<Vec<_>>(),
        vec![[1u8; 32], [2u8; 32]]
    );
    assert_eq!(signout_digests(&[0u8; 33]).count(), 0, "not whole digests");
    assert_eq!(signout_digests(&[]).count(), 0);
}
