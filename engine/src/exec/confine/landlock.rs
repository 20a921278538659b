//! The Landlock ruleset of one child, built in the parent: every path opened and every rule
//! added before the child starts, so that the child only has to call `landlock_restrict_self`.
//!
//! Each child gets its own ruleset. The child adds one rule itself, for its own `/proc/<pid>`
//! (which only it can name); a shared ruleset would hand that rule to the next child too.

use std::os::fd::OwnedFd;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::grants::{Grant, Kind};
use super::kernel::{ABI_NETWORK, ABI_SCOPES, Kernel};

/// A ruleset ready for `landlock_restrict_self`, and the rights of the child's own `/proc` rule.
#[derive(Debug)]
pub(super) struct Built {
    pub(super) fd: OwnedFd,
    pub(super) own_proc: u64,
}

/// Builds the ruleset for `grants` and the TCP ports in `connect`. `strict` makes any right
/// the kernel cannot enforce an error rather than a silent loss.
pub(super) fn build(
    kernel: &Kernel,
    grants: Vec<Grant>,
    connect: &[u16],
    strict: bool,
) -> Result<Option<Built>, landlock::RulesetError> {
    if kernel.landlock_abi == 0 {
        return Ok(None);
    }
    // The rights of the kernel's own ABI: what is enforced is what the run reports.
    let abi = ABI::from(i32::try_from(kernel.landlock_abi).unwrap_or(i32::MAX));
    let level = if strict {
        CompatLevel::HardRequirement
    } else {
        CompatLevel::BestEffort
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(AccessFs::from_all(abi))?;
    if kernel.landlock_abi >= ABI_NETWORK {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if kernel.landlock_abi >= ABI_SCOPES {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let mut created = ruleset.create()?;
    for grant in grants {
        let access = rights(grant.kind, grant.dir, abi);
        if !access.is_empty() {
            created = created.add_rule(PathBeneath::new(grant.fd, access))?;
        }
    }
    if kernel.landlock_abi >= ABI_NETWORK {
        for &port in connect {
            created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    Ok(fd.map(|fd| Built {
        fd,
        own_proc: (AccessFs::ReadFile | AccessFs::ReadDir).bits(),
    }))
}

/// The Landlock rights of a rule. A rule on a file may only carry file rights.
fn rights(kind: Kind, dir: bool, abi: ABI) -> BitFlags<AccessFs> {
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let access = match kind {
        Kind::Read => read,
        Kind::Write => all,
        Kind::Device => {
            (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev | AccessFs::Truncate)
                & all
        }
        Kind::List => AccessFs::ReadDir.into(),
        Kind::ListCreate => {
            (AccessFs::ReadDir
                | AccessFs::MakeReg
                | AccessFs::MakeDir
                | AccessFs::MakeSym
                | AccessFs::WriteFile
                | AccessFs::Truncate)
                & all
        }
    };
    if dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    }
}
