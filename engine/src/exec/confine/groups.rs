//! Stages told apart by group: as root, with the run's work root in memory, every child of a run
//! whose grants are the same enters one view (`namespaces::template::shared`) instead of a copy
//! of its own, and what keeps one stage out of another's folder is the file system's own
//! permission check (docs/executor.md, "Its view of the file system").
//!
//! The children run as uid 0 without capabilities. A stage's folder is owned by [`OWNER`] (a
//! uid no child runs as) and by the stage's own group, mode `0070`: its children, whose only
//! group is the stage's, get in through the group's bits; every other child is neither the
//! owner nor in the group, so it may not even pass through the folder (no `connect` to a
//! socket in it, no `stat` of what is inside), and being no owner it cannot `chmod` it. The
//! work root itself is owned by [`OWNER`], mode `0711`: a child may pass through it to its own
//! folder, but not list it, add to it or change it.
//!
//! The ids are far above those distributions give users and groups (and above the ranges
//! container runtimes usually give out), so that no file outside the run is the owner's or a
//! stage's.

use std::path::Path;

/// The uid that owns the work root and every stage's folder: never a child's.
pub const OWNER: u32 = 0x7E00_0000;

/// The group of the run's first stage; stage `i` has `FIRST_GROUP + i`.
const FIRST_GROUP: u32 = OWNER + 1;

/// The most stages a run tells apart by group (far more than a pipeline may declare).
const GROUPS: u32 = 1 << 20;

/// How a run tells its stages apart in a shared view: chosen once, when its work root is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Groups(());

impl Groups {
    /// Whether this process can: it is root in the host's user namespace (every uid and gid is
    /// its to give) and the kernel can make the namespaces. `Err` says why not; the run then
    /// copies a view for each child, as without root.
    pub fn available() -> Result<Self, String> {
        if !super::kernel().root {
            return Err("not root".into());
        }
        super::namespaces::available()?;
        for map in ["/proc/self/uid_map", "/proc/self/gid_map"] {
            let text = std::fs::read_to_string(map).map_err(|e| format!("{map}: {e}"))?;
            if !maps_everything(&text) {
                return Err(format!(
                    "{map} does not map every id (a user namespace): the stages' groups may not exist"
                ));
            }
        }
        Ok(Self(()))
    }

    /// The group of the run's stage `index`, or `None` past the last one.
    pub fn of_stage(self, index: usize) -> Option<u32> {
        let index = u32::try_from(index).ok().filter(|i| *i < GROUPS)?;
        Some(FIRST_GROUP + index)
    }

    /// Gives a stage's folder, just made at `path`, to [`OWNER`] and the stage's `group`, mode
    /// `0070` (not through the umask: the group must be able to write).
    pub fn give_folder(path: &Path, group: u32) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt as _;
        std::os::unix::fs::chown(path, Some(OWNER), Some(group))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o070))
    }
}

/// Makes, in the run's work root `root`, the folder a shared view's new root is mounted on
/// (`namespaces::PIVOT`): the owner's, mode 0700.
pub fn make_pivot(root: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    let at = root.join(super::namespaces::PIVOT);
    std::fs::DirBuilder::new().mode(0o700).create(&at)?;
    std::os::unix::fs::chown(&at, Some(OWNER), Some(OWNER))
}

/// Whether a `uid_map` or `gid_map` maps ids 0 to 2³² − 2 to themselves: the host's user
/// namespace.
fn maps_everything(text: &str) -> bool {
    let fields: Vec<&str> = text.split_whitespace().collect();
    fields == ["0", "0", "4294967295"]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hosts_own_maps_map_every_id() {
        assert!(maps_everything("         0          0 4294967295\n"));
        assert!(!maps_everything("         0     100000      65536\n"));
        assert!(!maps_everything("0 0 4294967295\n1 1 1\n"));
        assert!(!maps_everything(""));
    }

    #[test]
    fn every_stage_has_a_group_of_its_own_and_none_is_the_owners() {
        let groups = Groups(());
        assert_eq!(groups.of_stage(0), Some(OWNER + 1));
        assert_eq!(groups.of_stage(1), Some(OWNER + 2));
        assert_ne!(groups.of_stage(0), groups.of_stage(1));
        assert_eq!(groups.of_stage(GROUPS as usize), None);
        assert!(
            groups
                .of_stage(GROUPS as usize - 1)
                .is_some_and(|g| g < u32::MAX)
        );
    }
}
