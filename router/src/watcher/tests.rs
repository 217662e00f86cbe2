use super::*;

#[tokio::test]
async fn addresses_resolve_with_or_without_a_scheme() {
    let want: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    assert_eq!(resolve("127.0.0.1:8080").await, Some(want));
    assert_eq!(resolve("http://127.0.0.1:8080/").await, Some(want));
    assert_eq!(
        resolve("localhost:8080").await.map(|a| a.port()),
        Some(8080)
    );
    assert_eq!(resolve("not an address").await, None);
}
