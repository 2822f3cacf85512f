//! How messages quote what a user gave: one rule the project defines,
//! written down in docs/text-forms.md and followed by the managed edition's
//! SQL too, so that no toolchain upgrade (Rust's Debug escapes by its
//! Unicode tables) changes an error message.
//!
//! The rule: printable ASCII (space to `~`) stands for itself; tab, newline,
//! carriage return and NUL are `\t`, `\n`, `\r`, `\0`; every other character
//! is `\u{hex}` (its code point, lowercase hex). A quoted character also
//! escapes its quote and the backslash (`\'`, `\\`). What comes out is
//! ASCII, so it reaches a client whatever the database's encoding.

/// The escape of `c` under the rule, or `None` when it stands for itself
/// (and is no quote the caller must escape).
fn escape(c: char) -> Option<String> {
    match c {
        '\t' => Some("\\t".into()),
        '\n' => Some("\\n".into()),
        '\r' => Some("\\r".into()),
        '\0' => Some("\\0".into()),
        ' '..='~' => None,
        c => Some(format!("\\u{{{:x}}}", u32::from(c))),
    }
}

/// A character in single quotes: `'U'`, `'\n'`, `'\u{e9}'`, `'\''`.
pub fn quoted_char(c: char) -> String {
    let inner = match c {
        '\'' => "\\'".to_string(),
        '\\' => "\\\\".to_string(),
        c => escape(c).unwrap_or_else(|| c.to_string()),
    };
    format!("'{inner}'")
}

/// A name another role chose, for a log line: control characters (those of
/// Unicode's Cc, a newline above all) escaped by the rule so that a name
/// cannot forge a line; everything else as it is (a name may be in any
/// script, and the log is in the server's encoding).
pub fn controls_escaped(name: &str) -> String {
    name.chars().map(|c| if c.is_control() { escape(c).unwrap_or_default() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn characters_are_quoted_by_the_rule() {
        for (c, quoted) in [
            ('U', "'U'"),
            (' ', "' '"),
            ('~', "'~'"),
            ('\'', r"'\''"),
            ('\\', r"'\\'"),
            ('"', "'\"'"),
            ('\t', r"'\t'"),
            ('\n', r"'\n'"),
            ('\r', r"'\r'"),
            ('\0', r"'\0'"),
            ('\u{1}', r"'\u{1}'"),
            ('\u{7f}', r"'\u{7f}'"),
            ('\u{85}', r"'\u{85}'"),
            ('\u{a0}', r"'\u{a0}'"),
            ('é', r"'\u{e9}'"),
            ('\u{301}', r"'\u{301}'"),
            ('\u{200b}', r"'\u{200b}'"),
            ('😀', r"'\u{1f600}'"),
        ] {
            assert_eq!(quoted_char(c), quoted, "{}", u32::from(c));
        }
    }

    #[test]
    fn names_keep_their_script_and_lose_their_line_breaks() {
        assert_eq!(controls_escaped("sub\nWARNING: forged"), r"sub\nWARNING: forged");
        assert_eq!(controls_escaped("ünïcode \u{1b}[31m"), r"ünïcode \u{1b}[31m");
        assert_eq!(controls_escaped("a\u{0}b\u{85}c"), r"a\0b\u{85}c");
    }

    proptest! {
        /// Whatever the character, its quoted form is ASCII with no control
        /// character, and tells characters apart (no two quote alike).
        #[test]
        fn quoted_characters_are_printable_ascii_and_distinct(a: char, b: char) {
            let (qa, qb) = (quoted_char(a), quoted_char(b));
            prop_assert!(qa.bytes().all(|x| (b' '..=b'~').contains(&x)), "{qa}");
            prop_assert_eq!(qa == qb, a == b);
        }

        /// A name keeps every character but control ones, which leave no
        /// line break or escape sequence behind.
        #[test]
        fn escaped_names_hold_no_control_character(name in "\\PC*[\\x00-\\x1f\\x7f-\\u{9f}]?\\PC*") {
            let out = controls_escaped(&name);
            prop_assert!(!out.chars().any(char::is_control), "{out:?}");
            // The name's other characters are all there, in their order.
            let mut rest = out.chars();
            prop_assert!(name.chars().filter(|c| !c.is_control()).all(|c| rest.any(|o| o == c)), "{out:?}");
        }
    }
}
