//! New data directories as copies of one initdb per server and arguments.
//!
//! initdb is the costliest step of a test cluster (about a second of CPU,
//! and a run makes hundreds of clusters on two cores shared by every major
//! at once); copying a directory it made once costs a tenth of that. A copy
//! would share the template's system identifier, which the registry and
//! the copy detection tell nodes apart by, so each copy gets one of its own
//! in pg_control (with its checksum) and WAL that names it (pg_resetwal),
//! as a cluster of its own initdb would.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::{check, run_as_postgres};

/// Makes `data` a new cluster of the PostgreSQL in `bin_dir`, as
/// `initdb -A trust --no-sync -E UTF8 <initdb_args>` would.
pub fn copy_of_template(bin_dir: &str, initdb_args: &[&str], data: &Path) {
    let template = template(bin_dir, initdb_args);
    let data_text = data.to_str().expect("data directory path");
    check("cp of the initdb template", run_as_postgres(&["cp", "-a", template.to_str().unwrap(), data_text], &[]));
    give_own_system_identifier(&data.join("global/pg_control"));
    check("pg_resetwal", run_as_postgres(&[&format!("{bin_dir}/pg_resetwal"), "-D", data_text], &[]));
}

/// The template for this server and these arguments, made on first use by
/// whichever test process gets there first (the others wait on its lock).
/// Keyed by the server binary's path and modification time too, so that a
/// rebuilt or reinstalled server never gets a stale template.
fn template(bin_dir: &str, initdb_args: &[&str]) -> PathBuf {
    let postgres = Path::new(bin_dir).join("postgres");
    let built = fs::metadata(&postgres)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let key = format!("{bin_dir}|{built}|{}", initdb_args.join(" "));
    let dir = std::env::temp_dir().join("snowflake_id_initdb_templates");
    fs::create_dir_all(&dir).expect("initdb template directory");
    // Others' test processes and postgres (which copies from here) get in.
    let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777));
    let name = format!("{:08x}", crc32c::crc32c(key.as_bytes()));
    let template = dir.join(&name);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{name}.lock")))
        .expect("initdb template lock");
    lock.lock().expect("lock the initdb template");
    if !dir.join(format!("{name}.done")).exists() {
        let _ = fs::remove_dir_all(&template);
        let path = template.to_str().unwrap();
        check(
            "initdb",
            run_as_postgres(
                &[&[&format!("{bin_dir}/initdb"), "-D", path, "-A", "trust", "--no-sync", "-E", "UTF8"], initdb_args]
                    .concat(),
                &[],
            ),
        );
        File::create(dir.join(format!("{name}.done"))).expect("mark the initdb template done");
    }
    template
}

/// A random system identifier (initdb's is the clock and its pid), written into the
/// control file with the checksum recomputed. The checksum's offset moves
/// between majors (it is the last field of ControlFileData), so it is found
/// where it matches what precedes it: no other offset does by chance.
fn give_own_system_identifier(pg_control: &Path) {
    let mut bytes = fs::read(pg_control).expect("read pg_control");
    let at = (8..bytes.len().min(1024) - 4)
        .step_by(4)
        .find(|&at| crc32c::crc32c(&bytes[..at]).to_le_bytes() == bytes[at..at + 4])
        .unwrap_or_else(|| panic!("no checksum found in {}", pg_control.display()));
    let mut id = [0u8; 8];
    File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut id)).expect("read /dev/urandom");
    // Below 2^63 as initdb's are until 2038 (seconds in the high half).
    id[7] &= 0x7f;
    bytes[..8].copy_from_slice(&id);
    let sum = crc32c::crc32c(&bytes[..at]);
    bytes[at..at + 4].copy_from_slice(&sum.to_le_bytes());
    // Written in place: the file stays the postgres user's.
    fs::write(pg_control, &bytes).expect("write pg_control");
}
