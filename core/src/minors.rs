//! What differs between minor releases of one PostgreSQL major, decided by
//! the version of the server running (`server_version_num`), not by the
//! headers the extension was built against.

/// Whether `WalSndCtl`'s byte after `lsn[]` holds status bits
/// (`sync_standbys_status`: INIT and DEFINED) rather than the bool
/// `sync_standbys_defined`. The minors of May 2025 (15.13, 16.9, 17.5; all of
/// 18) replaced the bool with the bits in place, same offset and size. A
/// build made against newer headers and run on an older minor would read the
/// bool's 1 as "INIT, not DEFINED" and never wait, so the layout is chosen
/// by the version of the server running, not of the headers built against.
pub fn sync_standbys_status_has_bits(server_version_num: i32) -> bool {
    let version = server_version_num;
    match version / 10_000 {
        15 => version >= 150_013,
        16 => version >= 160_009,
        17 => version >= 170_005,
        _ => version >= 180_000,
    }
}

#[cfg(test)]
mod tests {
    use super::sync_standbys_status_has_bits as status_has_bits;

    #[test]
    fn sync_status_layout_follows_the_running_minor() {
        assert!(!status_has_bits(150_012) && status_has_bits(150_013) && status_has_bits(150_018));
        assert!(!status_has_bits(160_008) && status_has_bits(160_009));
        assert!(!status_has_bits(170_004) && status_has_bits(170_005) && status_has_bits(180_000));
    }
}
