//! Who may be in a file, and as what (docs/protocol.md, "HTTP in brief": who reaches a file).

use atrium_protocol::CloseCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::apptoken::Level;
use crate::ids::{digest, AccountId};
use crate::store::{FileRecord, LinkAccess};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Editor,
    Viewer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Editor => "editor",
            Role::Viewer => "viewer",
        }
    }
}

/// The reason, and the reject code, of someone with edit access waiting for a seat.
pub const EDITORS_FULL: &str = "editors-full";

/// A socket's seat as its reader sees it: written by the room whenever a role
/// changes, read by the socket so that a viewer's patch is refused at the door,
/// before its ops are parsed or queued. The room still checks every patch itself.
#[derive(Clone, Default)]
pub struct Seat(Arc<AtomicU8>);

const SEAT_EDITOR: u8 = 0;
const SEAT_VIEWER: u8 = 1;
const SEAT_WAITING: u8 = 2;

impl Seat {
    pub fn set(&self, role: Role, waiting: bool) {
        let v = match (role, waiting) {
            (Role::Editor, _) => SEAT_EDITOR,
            (Role::Viewer, false) => SEAT_VIEWER,
            (Role::Viewer, true) => SEAT_WAITING,
        };
        self.0.store(v, Ordering::Release);
    }

    /// The reject a patch from this seat gets without reaching the room, if any.
    pub fn refusal(&self) -> Option<(&'static str, &'static str)> {
        match self.0.load(Ordering::Acquire) {
            SEAT_VIEWER => Some(("viewer", "viewers cannot edit this file")),
            SEAT_WAITING => Some((EDITORS_FULL, "the file has as many editors as it allows")),
            _ => None,
        }
    }
}

/// What a person presented to get in; kept so link and key changes can be
/// applied to live sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Owner,
    /// A link key, of the key generation it matched.
    Key {
        edit: bool,
        generation: u64,
    },
    /// An app token's grant (docs/auth.md): the app decides, whatever the link says.
    Grant {
        edit: bool,
    },
}

/// Why someone may not join: each maps to a close code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No credentials, or a key that matches neither of the file's keys (4001).
    Unauthorized,
    /// Valid credentials that do not reach this file (4003).
    Forbidden,
}

impl Denied {
    pub fn close_code(self) -> CloseCode {
        match self {
            Denied::Unauthorized => CloseCode::Unauthorized,
            Denied::Forbidden => CloseCode::Forbidden,
        }
    }
}

/// Compares secrets by digest, so the comparison's timing says nothing about them.
fn same_secret(a: &str, b: &str) -> bool {
    digest(a) == digest(b)
}

/// What `account`, `key` and an app token's `grant` give on `file`. The owner is
/// the owner; an app grant wins over a link key.
pub fn access(
    file: &FileRecord,
    account: Option<&AccountId>,
    key: Option<&str>,
    grant: Option<Level>,
) -> Result<Access, Denied> {
    if account == Some(&file.owner) {
        return Ok(Access::Owner);
    }
    if let Some(level) = grant {
        return Ok(Access::Grant {
            edit: level == Level::Edit,
        });
    }
    match key {
        Some(k) if same_secret(k, &file.edit_key) => Ok(Access::Key {
            edit: true,
            generation: file.key_generation,
        }),
        Some(k) if same_secret(k, &file.view_key) => Ok(Access::Key {
            edit: false,
            generation: file.key_generation,
        }),
        Some(_) => Err(Denied::Unauthorized),
        None if account.is_some() => Err(Denied::Forbidden),
        None => Err(Denied::Unauthorized),
    }
}

/// The role an access gives under the file's current link setting, with the
/// reason when edit access was asked for but not granted.
pub fn role(file: &FileRecord, access: Access) -> Result<(Role, Option<&'static str>), Denied> {
    match (access, file.link) {
        (Access::Owner, _) => Ok((Role::Editor, None)),
        (Access::Grant { edit: true }, _) => Ok((Role::Editor, None)),
        (Access::Grant { edit: false }, _) => Ok((Role::Viewer, None)),
        (Access::Key { generation, .. }, _) if generation != file.key_generation => {
            Err(Denied::Forbidden)
        }
        (Access::Key { .. }, LinkAccess::None) => Err(Denied::Forbidden),
        (Access::Key { edit: true, .. }, LinkAccess::Edit) => Ok((Role::Editor, None)),
        (Access::Key { edit: true, .. }, LinkAccess::View) => Ok((Role::Viewer, Some("view-link"))),
        (Access::Key { edit: false, .. }, _) => Ok((Role::Viewer, None)),
    }
}

/// Whether someone of `role` may list and read the file's versions, and so hear of them on
/// the socket (`version`, `restored`): editors, and viewers while the owner allows it.
pub fn sees_history(role: Role, file: &FileRecord) -> bool {
    role == Role::Editor || file.viewers_see_history
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FileId;

    fn file(link: LinkAccess) -> FileRecord {
        FileRecord {
            id: FileId::parse("f1").unwrap(),
            owner: AccountId::parse("owner").unwrap(),
            name: "n".into(),
            link,
            view_key: "viewkey".into(),
            edit_key: "editkey".into(),
            key_generation: 3,
            version: 0,
            updated_at: 0,
            viewers_see_history: false,
        }
    }

    #[test]
    fn a_key_never_grants_more_than_the_link() {
        let owner = AccountId::parse("owner").unwrap();
        let other = AccountId::parse("other").unwrap();
        let f = file(LinkAccess::View);
        assert_eq!(access(&f, Some(&owner), None, None), Ok(Access::Owner));
        assert_eq!(access(&f, Some(&other), None, None), Err(Denied::Forbidden));
        assert_eq!(access(&f, None, None, None), Err(Denied::Unauthorized));
        assert_eq!(
            access(&f, None, Some("nope"), None),
            Err(Denied::Unauthorized)
        );
        let edit = access(&f, None, Some("editkey"), None).unwrap();
        assert_eq!(role(&f, edit), Ok((Role::Viewer, Some("view-link"))));
        assert_eq!(role(&file(LinkAccess::Edit), edit).unwrap().0, Role::Editor);
        assert_eq!(role(&file(LinkAccess::None), edit), Err(Denied::Forbidden));
        let view = access(&f, None, Some("viewkey"), None).unwrap();
        assert_eq!(role(&file(LinkAccess::Edit), view).unwrap().0, Role::Viewer);
        let mut rotated = file(LinkAccess::Edit);
        rotated.key_generation = 4;
        assert_eq!(role(&rotated, edit), Err(Denied::Forbidden));
    }

    #[test]
    fn an_app_grant_decides_whatever_the_link_says() {
        let other = AccountId::parse("sub-ann").unwrap();
        let owner = AccountId::parse("owner").unwrap();
        let f = file(LinkAccess::None);
        let edit = access(&f, Some(&other), None, Some(Level::Edit)).unwrap();
        assert_eq!(role(&f, edit).unwrap().0, Role::Editor);
        let view = access(&f, Some(&other), Some("editkey"), Some(Level::View)).unwrap();
        assert_eq!(role(&f, view).unwrap().0, Role::Viewer);
        assert_eq!(access(&f, Some(&other), None, None), Err(Denied::Forbidden));
        assert_eq!(
            access(&f, Some(&owner), None, Some(Level::View)),
            Ok(Access::Owner)
        );
    }
}
