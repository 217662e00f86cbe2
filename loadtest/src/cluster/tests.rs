use super::*;

#[test]
fn coordinators_get_a_namespace_of_their_own() {
    assert_eq!(
        coordinator_with_namespace("nats://127.0.0.1:4222/", "lt1"),
        "nats://127.0.0.1:4222?namespace=lt1"
    );
    assert_eq!(
        coordinator_with_namespace("nats://h:1?namespace=prod", "lt2"),
        "nats://h:1?namespace=lt2"
    );
}
