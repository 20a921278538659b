//! What isolation a run had: one [`Layer`] per mechanism, held or not and why, recorded in the
//! manifest (`isolation`) and said once as a warning for each layer that is missing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::kernel::{ABI_NETWORK, ABI_SCOPES, Kernel};
use super::spec::ConfineSpec;

/// Layer names the engine reports (the binary adds its own through `RunOptions`).
pub mod layer {
    pub const NO_NEW_PRIVILEGES: &str = "no-new-privileges";
    pub const CAPABILITIES_DROPPED: &str = "capabilities-dropped";
    pub const PARENT_DEATH_SIGNAL: &str = "parent-death-signal";
    pub const SUBREAPER: &str = "subreaper";
    pub const LANDLOCK_FILESYSTEM: &str = "landlock-filesystem";
    pub const LANDLOCK_NETWORK: &str = "landlock-network";
    pub const LANDLOCK_SCOPES: &str = "landlock-scopes";
    pub const INHERITED_DESCRIPTORS: &str = "inherited-descriptors";
    pub const NO_KEYRING: &str = "no-keyring";
    pub const CGROUP: &str = "cgroup";
    pub const NETWORK_NAMESPACE: &str = "network-namespace";
    pub const IPC_NAMESPACE: &str = "ipc-namespace";
    pub const MOUNT_NAMESPACE: &str = "mount-namespace";
    pub const PID_NAMESPACE: &str = "pid-namespace";
}

/// How much isolation the pipeline requires (`isolation "strict"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Every layer the platform has; each missing one is a warning.
    #[default]
    BestEffort,
    /// Every layer, or the run does not start (exit 2).
    Strict,
}

impl From<crate::model::IsolationLevel> for Level {
    fn from(level: crate::model::IsolationLevel) -> Self {
        match level {
            crate::model::IsolationLevel::BestEffort => Level::BestEffort,
            crate::model::IsolationLevel::Strict => Level::Strict,
        }
    }
}

/// One isolation mechanism and whether it held for the whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Layer {
    /// `no-new-privileges`, `capabilities-dropped`, `parent-death-signal`, `subreaper`,
    /// `inherited-descriptors`, `no-keyring`, `cgroup`, `pid-namespace`, `network-namespace`,
    /// `ipc-namespace`, `mount-namespace`, `landlock-filesystem`, `landlock-network`, `landlock-scopes`, and the
    /// binary's own (`scrubbed-environment`, `not-dumpable`, `watchdog`).
    pub name: String,
    pub held: bool,
    /// What it does for the run, or why it is missing.
    pub detail: String,
}

impl Layer {
    pub fn held(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            held: true,
            detail: detail.into(),
        }
    }

    pub fn missing(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            held: false,
            detail: detail.into(),
        }
    }

    /// The run-level warning for a missing layer.
    pub fn warning(&self) -> String {
        format!("isolation: {} is not held — {}", self.name, self.detail)
    }
}

/// The isolation of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Isolation {
    pub level: Level,
    /// The kernel's Landlock ABI version (0: no Landlock).
    pub landlock_abi: u32,
    pub layers: Vec<Layer>,
}

const OFF: &str = "confinement of children is turned off for this run (RunOptions::confine_children, for measurements only)";

impl Isolation {
    /// The layers a run gets from `kernel`, with the subreaper set or not, children confined or
    /// not, and the binary's own `process_layers`.
    pub fn assess(
        level: Level,
        kernel: &Kernel,
        subreaper: bool,
        confined: bool,
        process_layers: &[Layer],
    ) -> Self {
        let linux = cfg!(target_os = "linux");
        let abi = kernel.landlock_abi;
        let gate = |name: &str, ok: bool, held: String, missing: String| {
            if !confined {
                Layer::missing(name, OFF)
            } else if !linux {
                Layer::missing(name, "not available outside Linux")
            } else if ok {
                Layer::held(name, held)
            } else {
                Layer::missing(name, missing)
            }
        };
        let mut layers = vec![
            gate(
                layer::NO_NEW_PRIVILEGES,
                kernel.no_new_privs,
                "children start with PR_SET_NO_NEW_PRIVS: sudo and setuid programs gain nothing"
                    .into(),
                "the kernel has no PR_SET_NO_NEW_PRIVS (Linux 3.5)".into(),
            ),
            gate(
                layer::CAPABILITIES_DROPPED,
                true,
                if kernel.root {
                    "reviewflow runs as root: children drop every capability (bounding, ambient, effective, permitted, inheritable)".into()
                } else {
                    "reviewflow does not run as root: children hold no capability (ambient ones are cleared)".into()
                },
                String::new(),
            ),
            gate(
                layer::PARENT_DEATH_SIGNAL,
                true,
                "children get SIGKILL when the thread that started them ends".into(),
                String::new(),
            ),
            if !confined {
                Layer::missing(layer::SUBREAPER, OFF)
            } else if subreaper {
                Layer::held(
                    layer::SUBREAPER,
                    "what a stage leaves behind (double fork, setsid) is adopted and ended when the stage ends",
                )
            } else {
                Layer::missing(
                    layer::SUBREAPER,
                    "PR_SET_CHILD_SUBREAPER is not available: a process a stage leaves behind with setsid survives it",
                )
            },
            gate(
                layer::LANDLOCK_FILESYSTEM,
                abi >= 1,
                format!("Landlock ABI {abi}: children read the checkout and the system folders and write only their own folder"),
                "the kernel has no Landlock (Linux 5.13 or later, enabled at boot): children reach every file the user can".into(),
            ),
            gate(
                layer::LANDLOCK_NETWORK,
                abi >= ABI_NETWORK,
                "children connect only to the TCP ports their stage declares (`network=`), and never bind".into(),
                format!("Landlock ABI {abi} has no TCP rules (ABI {ABI_NETWORK}, Linux 6.7): children have the network"),
            ),
            gate(
                layer::LANDLOCK_SCOPES,
                abi >= ABI_SCOPES,
                "children cannot signal processes outside their sandbox nor reach abstract unix sockets".into(),
                format!("Landlock ABI {abi} has no scopes (ABI {ABI_SCOPES}, Linux 6.12): children can signal the user's other processes and reach abstract unix sockets"),
            ),
        ];
        layers.push(gate(
            layer::INHERITED_DESCRIPTORS,
            true,
            "every descriptor but stdin, stdout and stderr is closed at a child's execve (close_range)".into(),
            String::new(),
        ));
        layers.push(gate(
            layer::NO_KEYRING,
            super::keyring::filter().is_some(),
            "add_key, request_key and keyctl fail in every child (a seccomp filter): no stage reaches a key another stage, or another process of its user, keeps in the kernel, and none outlives the run".into(),
            "no seccomp filter for this architecture: a stage reads the keys another stage added to its user's keyring, and they outlive the run".into(),
        ));
        let cgroup = super::cgroup::availability();
        layers.push(gate(
            layer::CGROUP,
            matches!(cgroup, super::cgroup::Availability::Held(_)),
            "each child runs in a cgroup of its own, ended whole (cgroup.kill) when the child exits and when its stage ends: no process of a stage outlives it, whatever it forged".into(),
            match cgroup {
                super::cgroup::Availability::Missing(why) => format!(
                    "{why}: what a stage leaves behind is found by the subreaper and a marker in its environment, which it can forge"
                ),
                super::cgroup::Availability::Held(_) => String::new(),
            },
        ));
        let namespaces = super::namespaces::available();
        let why_not = namespaces.clone().err().unwrap_or_default();
        layers.push(gate(
            layer::NETWORK_NAMESPACE,
            namespaces.is_ok(),
            format!("a stage that declares no network runs in a network namespace of its own with only loopback, made {}: no UDP, no DNS, no service of the host's loopback", super::namespaces::made_by()),
            format!("{why_not}: a stage without `network` still sends UDP and reaches the host's loopback services and unix sockets"),
        ));
        layers.push(gate(
            layer::IPC_NAMESPACE,
            namespaces.is_ok(),
            format!("each stage's children run in an IPC namespace of the stage's (the stages that hold no secret and read no private value share one), made {}: no System V or POSIX IPC object of another stage's or of the host's, and none outlives the run", super::namespaces::made_by()),
            format!("{why_not}: a stage opens the System V shared memory, semaphores and message queues another stage made, and what it makes outlives the run"),
        ));
        layers.push(gate(
            layer::MOUNT_NAMESPACE,
            namespaces.is_ok(),
            format!("each child sees the file system read-only but for its own folder and declared grants, and cannot reach other stages' folders, .reviewflow, the runs or the checkout's .git at all; made {}", super::namespaces::made_by()),
            format!("{why_not}: a child can change the mode, times and xattrs of files it may not write, and connect to a socket in a folder it may not read"),
        ));
        let cgroup_held = matches!(
            super::cgroup::availability(),
            super::cgroup::Availability::Held(_)
        );
        layers.push(gate(
            layer::PID_NAMESPACE,
            cgroup_held || namespaces.is_ok(),
            if cgroup_held {
                "not needed: the cgroup layer holds, and ends whatever a stage started".into()
            } else {
                format!("the cgroup layer is missing: each stage's children start every process in a PID namespace of the stage's, made {}, whose init the engine kills when the stage ends, and the kernel with it everything in it, whatever it forged", super::namespaces::made_by())
            },
            format!("{why_not}: without the cgroup layer, what a stage leaves behind is found by the subreaper and a marker in its environment, which it can forge"),
        ));
        layers.extend(process_layers.iter().cloned());
        Self {
            level,
            landlock_abi: abi,
            layers,
        }
    }

    /// The layers that did not hold.
    pub fn missing(&self) -> impl Iterator<Item = &Layer> {
        self.layers.iter().filter(|l| !l.held)
    }

    /// The layer named `name`.
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }
}

/// One line saying how a stage's child is confined, for its status line.
pub fn describe(spec: &ConfineSpec, kernel: &Kernel) -> String {
    if kernel.landlock_abi == 0 {
        return "not confined: the kernel has no Landlock (see the run's isolation warnings)"
            .into();
    }
    let extra = spec.write.len();
    let writes = match extra {
        0 => "writes only its work folder".to_string(),
        n => format!("writes its work folder and {n} declared path(s)"),
    };
    let network = if kernel.landlock_abi < ABI_NETWORK {
        "network: not restricted (Landlock ABI < 4)".to_string()
    } else if spec.connect.is_empty() {
        "network: none".to_string()
    } else {
        let ports: Vec<String> = spec.connect.iter().map(u16::to_string).collect();
        format!("network: TCP {}", ports.join(", "))
    };
    format!("confined: reads the checkout and system folders, {writes}; {network}")
}
