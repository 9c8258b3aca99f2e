//! Who may do what, checked on every request the node serves: the role a
//! route needs (`access`), the caller's role from its token or the
//! anonymous role (`guard`), and the caller's credential carried on when a
//! follower forwards its request to the leader (`credential`), which
//! checks it again.

pub mod access;
pub mod credential;
pub mod guard;

pub use access::{Access, needed};
pub use guard::{AnonymousRole, Guard, guard};
