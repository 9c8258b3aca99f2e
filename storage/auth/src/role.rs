//! The roles, each allowing what the one before it does and more.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a caller may do: read keys and the cluster's state; also write
/// keys and leases; also change the cluster (membership, leadership,
/// compaction, snapshots, backups, load runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Read,
    Write,
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Read, Role::Write, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
        }
    }

    /// Whether this role allows what `needed` allows.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role {s:?}: read, write or admin"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_allows_those_below_it_and_no_more() {
        assert!(Role::Admin.allows(Role::Write) && Role::Admin.allows(Role::Read));
        assert!(Role::Write.allows(Role::Read) && !Role::Write.allows(Role::Admin));
        assert!(!Role::Read.allows(Role::Write));
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>().unwrap(), r);
        }
        assert!("root".parse::<Role>().is_err());
    }
}
