//! Reading `shared_preload_libraries`: PostgreSQL loads `citus`,
//! `$libdir/citus`, `citus.so` and a full path alike, so whoever asks
//! whether a library is preloaded must take every spelling, or a feature
//! keyed on it (the Citus cluster watch) is silently left out.

/// A test for one entry of the list: whether it loads `library`.
pub fn names_library(library: &str) -> impl Fn(&str) -> bool + '_ {
    move |entry| {
        let entry = entry.trim().trim_matches('"');
        let file = entry.rsplit('/').next().unwrap_or(entry);
        file.strip_suffix(".so").unwrap_or(file) == library
    }
}

#[cfg(test)]
mod tests {
    use super::names_library;

    #[test]
    fn every_spelling_of_a_preloaded_library_is_seen() {
        let citus = names_library("citus");
        for entry in
            ["citus", " citus", "\"citus\"", "$libdir/citus", "citus.so", "/usr/lib/postgresql/15/lib/citus.so"]
        {
            assert!(citus(entry), "{entry}");
        }
        for entry in ["snowflake_id", "citus_extra", "pg_citus", "$libdir/citusx.so", ""] {
            assert!(!citus(entry), "{entry}");
        }
    }
}
