//! Moving the run's secrets out of reviewflow's environment block.
//!
//! `/proc/<pid>/environ` shows the block a process was started with: unsetting a variable later
//! does not remove it from there. So `reviewflow run` puts the secret variables it was started
//! with into a sealed memfd, re-executes itself with an environment without them plus
//! `REVIEWFLOW_SECRETS_FD=<fd>`, and the new image reads them back from the fd (Linux only).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::{AsFd, AsRawFd, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::process::CommandExt as _;

use reviewflow_engine::exec::secret::SecretValue;
use rustix::fs::{MemfdFlags, SealFlags};

/// Names the memfd in the re-executed process. Nothing secret: a number.
pub const SECRETS_FD_VAR: &str = "REVIEWFLOW_SECRETS_FD";
/// What `/proc/self/fd/N` of our memfd reads as, after `/memfd:`.
const MEMFD_NAME: &str = "reviewflow-secrets";
const MAGIC: &[u8] = b"reviewflow-secrets/v1\n";
/// Far more than any set of secrets; bounds what the re-executed process reads.
pub const MAX_PAYLOAD: u64 = 16 << 20;
const MAX_ENTRIES: u32 = 4096;
const MAX_NAME: usize = 4096;
/// Once these are on, nobody holding the fd can change the payload or unseal it.
const SEALS: SealFlags = SealFlags::SEAL
    .union(SealFlags::SHRINK)
    .union(SealFlags::GROW)
    .union(SealFlags::WRITE);

/// The secret variables handed over by the process before the re-exec, by variable name.
pub type Handover = BTreeMap<Vec<u8>, SecretValue>;

/// The variables among `names` that are set, with their values (names deduplicated).
pub fn set_variables<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(String, SecretValue)> {
    let mut seen = std::collections::BTreeSet::new();
    names
        .into_iter()
        .filter(|n| seen.insert(*n))
        .filter_map(|n| {
            std::env::var_os(n).map(|v| (n.to_string(), SecretValue::new(v.into_vec())))
        })
        .collect()
}

/// Re-executes `/proc/self/exe` with the same argv and the environment without `vars`, handing
/// them over through a sealed memfd. Returns only when that failed: the caller goes on as is.
pub fn reexec(vars: &[(String, SecretValue)]) -> std::io::Error {
    let fd = match handover_fd(vars) {
        Ok(fd) => fd,
        Err(e) => return e,
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| OsString::from("reviewflow"));
    let mut command = std::process::Command::new("/proc/self/exe");
    command.arg0(arg0).args(args).env_clear();
    for (name, value) in std::env::vars_os() {
        let secret = vars.iter().any(|(n, _)| name.as_os_str() == OsStr::new(n));
        if !secret && name != SECRETS_FD_VAR {
            command.env(name, value);
        }
    }
    command.env(SECRETS_FD_VAR, fd.as_raw_fd().to_string());
    // exec discards buffered output: write it out first.
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let error = command.exec();
    drop(fd);
    error
}

/// A memfd holding the payload, sealed, open across exec.
fn handover_fd(vars: &[(String, SecretValue)]) -> std::io::Result<OwnedFd> {
    // No CLOEXEC: the fd must survive the exec; nothing else is started before it.
    let fd = rustix::fs::memfd_create(MEMFD_NAME, MemfdFlags::ALLOW_SEALING)?;
    let payload = encode(vars);
    let mut file = std::fs::File::from(fd);
    file.write_all(payload.expose_secret())?;
    let fd = OwnedFd::from(file);
    rustix::fs::fcntl_add_seals(&fd, SEALS)?;
    Ok(fd)
}

/// `MAGIC`, a count, then per variable its name and value, each with a u32 LE length. The
/// buffer is sized up front so that no reallocation leaves an unzeroized copy behind.
fn encode(vars: &[(String, SecretValue)]) -> SecretValue {
    let size = MAGIC.len()
        + 4
        + vars
            .iter()
            .map(|(n, v)| 8 + n.len() + v.len())
            .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len_u32(vars.len()).to_le_bytes());
    for (name, value) in vars {
        out.extend_from_slice(&len_u32(name.len()).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&len_u32(value.len()).to_le_bytes());
        out.extend_from_slice(value.expose_secret());
    }
    SecretValue::new(out)
}

fn len_u32(n: usize) -> u32 {
    // Environment strings are far below 4 GiB (the kernel caps argv + envp much lower).
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Parses a payload; anything but exactly the format is refused.
fn decode(bytes: &[u8]) -> Result<Handover, String> {
    let mut rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("it does not start with the reviewflow-secrets/v1 header")?;
    let count = take_u32(&mut rest)?;
    if count > MAX_ENTRIES {
        return Err(format!("it claims {count} variables"));
    }
    let mut out = Handover::new();
    for _ in 0..count {
        let name = take_bytes(&mut rest)?;
        let valid_name = !name.is_empty()
            && name.len() <= MAX_NAME
            && !name.contains(&b'=')
            && !name.contains(&0);
        if !valid_name {
            return Err("it holds an invalid variable name".into());
        }
        let value = take_bytes(&mut rest)?;
        if value.contains(&0) {
            return Err("it holds a value with a NUL byte".into());
        }
        if out.insert(name.to_vec(), SecretValue::new(value)).is_some() {
            return Err("it names a variable twice".into());
        }
    }
    if !rest.is_empty() {
        return Err("it has trailing bytes".into());
    }
    Ok(out)
}

fn take_u32(rest: &mut &[u8]) -> Result<u32, String> {
    let (head, tail) = rest.split_first_chunk::<4>().ok_or("it is truncated")?;
    *rest = tail;
    Ok(u32::from_le_bytes(*head))
}

fn take_bytes<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = take_u32(rest)? as usize;
    if len > rest.len() {
        return Err("it is truncated".into());
    }
    let (head, tail) = rest.split_at(len);
    *rest = tail;
    Ok(head)
}

/// Checks the value of `REVIEWFLOW_SECRETS_FD` names an open, sealed memfd of ours, and takes
/// ownership of it. Never opens anything by name: only an fd this process already holds.
pub fn claim_fd(value: &OsStr) -> Result<OwnedFd, String> {
    let text = value
        .to_str()
        .filter(|t| !t.is_empty() && t.len() <= 9 && t.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("{SECRETS_FD_VAR}={value:?} is not a file descriptor number"))?;
    let n: i32 = text
        .parse()
        .map_err(|_| format!("{SECRETS_FD_VAR}={text} is not a file descriptor number"))?;
    // std keeps 0-2 open (it reopens closed ones on /dev/null), so our memfd is never below 3.
    if n < 3 {
        return Err(format!(
            "{SECRETS_FD_VAR}={n} names a standard stream, not reviewflow's secrets"
        ));
    }
    // Open at all? The link exists only for an open fd of this process.
    let link = std::fs::read_link(format!("/proc/self/fd/{n}"))
        .map_err(|e| format!("{SECRETS_FD_VAR}={n} is not an open file descriptor: {e}"))?;
    // SAFETY: fd n is open (its /proc link exists) and was inherited through exec: no other
    // owner exists in this process, which has started nothing yet.
    let fd = unsafe { OwnedFd::from_raw_fd(n) };
    check_ours(&fd, link.as_os_str().as_bytes())
        .map_err(|why| format!("{SECRETS_FD_VAR}={n} is not reviewflow's secrets memfd: {why}"))?;
    Ok(fd)
}

/// Our memfd: its name, a regular file, every seal we set, a bounded size.
fn check_ours(fd: &OwnedFd, link: &[u8]) -> Result<u64, String> {
    let expected = format!("/memfd:{MEMFD_NAME} (deleted)");
    if link != expected.as_bytes() {
        return Err(format!("it is {:?}", String::from_utf8_lossy(link)));
    }
    let stat = rustix::fs::fstat(fd).map_err(|e| format!("fstat: {e}"))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err("not a regular file".into());
    }
    let seals = rustix::fs::fcntl_get_seals(fd).map_err(|e| format!("no seals: {e}"))?;
    if !seals.contains(SEALS) {
        return Err("it is not sealed".into());
    }
    let size = u64::try_from(stat.st_size).map_err(|_| "a negative size".to_string())?;
    if size > MAX_PAYLOAD {
        return Err(format!("{size} bytes, more than {MAX_PAYLOAD}"));
    }
    Ok(size)
}

/// Reads the whole payload of a claimed fd, closes it, and parses it.
pub fn read_handover(fd: OwnedFd) -> Result<Handover, String> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(|e| format!("{SECRETS_FD_VAR}: {e}"))?;
    let size = check_ours(&fd, link.as_os_str().as_bytes())
        .map_err(|why| format!("{SECRETS_FD_VAR}: {why}"))?;
    let len = usize::try_from(size).map_err(|_| format!("{SECRETS_FD_VAR}: too large"))?;
    // Sized once: the bytes are never copied by a reallocation.
    let buffer = SecretValue::new(read_exact_at(fd.as_fd(), len)?);
    drop(fd);
    decode(buffer.expose_secret())
        .map_err(|why| format!("{SECRETS_FD_VAR}: the handed-over secrets do not parse: {why}"))
}

fn read_exact_at(fd: std::os::fd::BorrowedFd<'_>, len: usize) -> Result<Vec<u8>, String> {
    let mut buffer = vec![0u8; len];
    let mut done = 0;
    while done < len {
        match rustix::io::pread(fd, &mut buffer[done..], done as u64) {
            Ok(0) => {
                return Err(format!(
                    "{SECRETS_FD_VAR}: the payload is shorter than its size"
                ));
            }
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("{SECRETS_FD_VAR}: cannot read: {e}")),
        }
    }
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, SecretValue)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), SecretValue::from(*v)))
            .collect()
    }

    #[test]
    fn a_payload_round_trips() {
        let payload = encode(&vars(&[("A_TOKEN", "one"), ("KEY", "two=three")]));
        let back = decode(payload.expose_secret()).expect("parses");
        assert_eq!(back.len(), 2);
        assert_eq!(back[b"A_TOKEN".as_slice()].expose_secret(), b"one");
        assert_eq!(back[b"KEY".as_slice()].expose_secret(), b"two=three");
        let empty = encode(&[]);
        assert!(decode(empty.expose_secret()).expect("parses").is_empty());
    }

    #[test]
    fn a_malformed_payload_is_refused() {
        let good = encode(&vars(&[("A", "value")]));
        let good = good.expose_secret();
        assert!(decode(&good[..good.len() - 1]).is_err(), "truncated");
        assert!(decode(&[good, b"x"].concat()).is_err(), "trailing bytes");
        assert!(decode(b"something else").is_err(), "no header");
        let twice = encode(&vars(&[("A", "1"), ("A", "2")]));
        assert!(decode(twice.expose_secret()).is_err(), "a name twice");
        for name in ["", "A=B", "A\0B"] {
            let bad = encode(&vars(&[(name, "v")]));
            assert!(decode(bad.expose_secret()).is_err(), "name {name:?}");
        }
        let nul = encode(&vars(&[("A", "v\0w")]));
        assert!(decode(nul.expose_secret()).is_err(), "a NUL in a value");
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_err(), "a huge count");
        let mut long = MAGIC.to_vec();
        long.extend_from_slice(&1u32.to_le_bytes());
        long.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&long).is_err(), "a length beyond the end");
    }

    fn claim(fd: OwnedFd) -> Result<Handover, String> {
        // Hand the fd over as the re-executed process would find it: by number.
        let n = std::os::fd::IntoRawFd::into_raw_fd(fd);
        let claimed = claim_fd(OsStr::new(&n.to_string()))?;
        read_handover(claimed)
    }

    #[test]
    fn our_sealed_memfd_is_read_back() {
        let fd = handover_fd(&vars(&[("CANARY", "v4lue")])).expect("memfd");
        let back = claim(fd).expect("ours");
        assert_eq!(back[b"CANARY".as_slice()].expose_secret(), b"v4lue");
    }

    #[test]
    fn other_files_are_refused() {
        // Another memfd name, though sealed.
        let other = rustix::fs::memfd_create("other", MemfdFlags::ALLOW_SEALING).expect("memfd");
        rustix::fs::fcntl_add_seals(&other, SEALS).expect("seal");
        assert!(claim(other).unwrap_err().contains("is not reviewflow's"));
        // Our name, not sealed: anyone holding it could have rewritten it.
        let unsealed = rustix::fs::memfd_create(MEMFD_NAME, MemfdFlags::empty()).expect("memfd");
        assert!(claim(unsealed).unwrap_err().contains("not sealed"));
        // A regular file holding a well-formed payload.
        let mut file = tempfile::tempfile().expect("file");
        file.write_all(encode(&vars(&[("A", "b")])).expose_secret())
            .expect("write");
        assert!(claim(OwnedFd::from(file)).is_err());
        // A pipe.
        let (read, _write) = rustix::pipe::pipe().expect("pipe");
        assert!(claim(read).is_err());
    }

    #[test]
    fn bad_numbers_are_refused() {
        for text in ["", "abc", "-1", "0", "2", "99999999", "3 ", "0x5"] {
            assert!(claim_fd(OsStr::new(text)).is_err(), "{text:?}");
        }
    }
}
