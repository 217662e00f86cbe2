//! The `hello` a socket opens with: the credentials it shows and its client id.

use super::*;

/// The first message of a socket.
#[derive(Clone, Debug)]
pub struct Hello {
    pub token: Option<String>,
    pub key: Option<String>,
    pub client: String,
    pub since: Option<u64>,
    pub name: Option<String>,
}

impl Hello {
    pub fn token(token: &str) -> Hello {
        Hello {
            token: Some(token.to_string()),
            key: None,
            client: secret(),
            since: None,
            name: None,
        }
    }

    pub fn key(key: &str) -> Hello {
        Hello {
            token: None,
            key: Some(key.to_string()),
            client: secret(),
            since: None,
            name: Some("Guest".to_string()),
        }
    }

    pub fn anonymous() -> Hello {
        Hello {
            token: None,
            key: None,
            client: secret(),
            since: None,
            name: Some("Nobody".to_string()),
        }
    }

    pub fn since(mut self, since: Option<u64>) -> Hello {
        self.since = since;
        self
    }

    pub fn to_json(&self) -> Value {
        json!({
            "type": "hello",
            "token": self.token,
            "key": self.key,
            "client": self.client,
            "since": self.since,
            "name": self.name,
        })
    }
}
