//! IDs as short text for URLs and JSON: base62 and Crockford base32.
//!
//! A default-layout ID is a 19-digit number above JavaScript's 2^53, so
//! applications show it as a string; these are the two common short forms,
//! written here once so that every application and the database agree.
//!
//! Both are written at a **fixed width** (13 symbols of base32, 11 of
//! base62) with alphabets in ASCII order, so that the text of two IDs sorts
//! bytewise (`COLLATE "C"`, `ORDER BY` in a JSON store, `sort` in a shell) as
//! the numbers do. The shortest form would save at most one symbol for a
//! live ID: with the default layout an ID needs 11 base62 symbols after
//! about 6 years from the epoch and 13 base32 symbols after about 9, so a
//! shortest form would change length, and break the order, during the
//! life of a table. Decoding accepts shorter text too (leading zeros left
//! out), so that numbers written by other tools are read back.
//!
//! Decoding is strict about everything else: a symbol outside the alphabet,
//! empty text, too many symbols, or a number above `i64::MAX` is an error
//! that names the character and its position, never a guess.

use std::fmt;

/// The two text forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `0-9A-Za-z`, ASCII order, 11 symbols, case-sensitive.
    Base62,
    /// Crockford's base32 (`0-9A-Z` less I, L, O, U), 13 symbols, read
    /// without regard to case, with I and L read as 1, O as 0, and hyphens
    /// between symbols ignored.
    Base32,
}

impl Form {
    /// The width every ID is written at: the fewest symbols that hold `i64::MAX`.
    pub const fn width(self) -> usize {
        match self {
            Form::Base62 => BASE62_WIDTH,
            Form::Base32 => BASE32_WIDTH,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Form::Base62 => "base62",
            Form::Base32 => "Crockford base32",
        }
    }
}

/// What text cannot be read as an ID, or what ID cannot be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextError {
    /// A character outside the form's alphabet; `position` counts characters from 1.
    BadCharacter { form: Form, character: char, position: usize },
    /// Nothing to read.
    Empty { form: Form },
    /// More symbols than the fixed width: not an ID written in this form.
    TooLong { form: Form, symbols: usize },
    /// The symbols are valid but the number is above `i64::MAX`.
    OutOfRange { form: Form },
    /// A negative number is never a snowflake ID (the sign bit is always 0).
    Negative { id: i64 },
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::BadCharacter { form, character, position } => {
                write!(
                    f,
                    "invalid character {} at position {position} in {} text",
                    crate::quote::quoted_char(*character),
                    form.name()
                )
            }
            TextError::Empty { form } => write!(f, "empty {} text is not a snowflake ID", form.name()),
            TextError::TooLong { form, symbols } => write!(
                f,
                "{} text of {symbols} symbols is too long for a snowflake ID (at most {})",
                form.name(),
                form.width()
            ),
            TextError::OutOfRange { form } => write!(f, "{} text is above the largest bigint", form.name()),
            TextError::Negative { id } => write!(f, "snowflake ID {id} is negative"),
        }
    }
}

impl std::error::Error for TextError {}

const BASE62_WIDTH: usize = 11;
const BASE32_WIDTH: usize = 13;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BASE32: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Marks a byte outside the alphabet in the decoding tables.
const BAD: u8 = 0xFF;
/// Marks the hyphen in Crockford's table.
const HYPHEN: u8 = 0xFE;

const fn base62_table() -> [u8; 256] {
    let mut t = [BAD; 256];
    let mut i = 0;
    while i < 62 {
        t[BASE62[i] as usize] = i as u8;
        i += 1;
    }
    t
}

const fn base32_table() -> [u8; 256] {
    let mut t = [BAD; 256];
    let mut i = 0;
    while i < 32 {
        t[BASE32[i] as usize] = i as u8;
        t[BASE32[i].to_ascii_lowercase() as usize] = i as u8;
        i += 1;
    }
    // Crockford: symbols a reader may mistake for digits are read as those digits.
    t[b'I' as usize] = 1;
    t[b'i' as usize] = 1;
    t[b'L' as usize] = 1;
    t[b'l' as usize] = 1;
    t[b'O' as usize] = 0;
    t[b'o' as usize] = 0;
    t[b'-' as usize] = HYPHEN;
    t
}

static BASE62_VALUES: [u8; 256] = base62_table();
static BASE32_VALUES: [u8; 256] = base32_table();

/// An ID as 11 base62 symbols; `id` must not be negative.
pub fn to_base62(id: i64) -> Result<[u8; BASE62_WIDTH], TextError> {
    let mut v = u64::try_from(id).map_err(|_| TextError::Negative { id })?;
    let mut out = [b'0'; BASE62_WIDTH];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(v % 62) as usize];
        v /= 62;
    }
    Ok(out)
}

/// An ID as 13 Crockford base32 symbols, upper case, no hyphens; `id` must
/// not be negative.
pub fn to_base32(id: i64) -> Result<[u8; BASE32_WIDTH], TextError> {
    let mut v = u64::try_from(id).map_err(|_| TextError::Negative { id })?;
    let mut out = [b'0'; BASE32_WIDTH];
    for slot in out.iter_mut().rev() {
        *slot = BASE32[(v & 31) as usize];
        v >>= 5;
    }
    Ok(out)
}

/// [`to_base62`] as a `String`, for callers outside the hot path.
pub fn to_base62_string(id: i64) -> Result<String, TextError> {
    to_base62(id).map(|b| b.iter().map(|&c| char::from(c)).collect())
}

/// [`to_base32`] as a `String`, for callers outside the hot path.
pub fn to_base32_string(id: i64) -> Result<String, TextError> {
    to_base32(id).map(|b| b.iter().map(|&c| char::from(c)).collect())
}

/// The ID that base62 `text` stands for: 1 to 11 symbols, case-sensitive.
pub fn from_base62(text: &str) -> Result<i64, TextError> {
    decode(text, Form::Base62, 62, &BASE62_VALUES)
}

/// The ID that Crockford base32 `text` stands for: 1 to 13 symbols, any
/// case, I and L read as 1 and O as 0, hyphens between symbols ignored.
pub fn from_base32(text: &str) -> Result<i64, TextError> {
    decode(text, Form::Base32, 32, &BASE32_VALUES)
}

fn decode(text: &str, form: Form, radix: i64, values: &[u8; 256]) -> Result<i64, TextError> {
    let bytes = text.as_bytes();
    let mut value: i64 = 0;
    let mut symbols = 0usize;
    let mut overflow = false;
    for (i, &b) in bytes.iter().enumerate() {
        let v = values[usize::from(b)];
        if v == HYPHEN {
            // Only between two symbols: a leading one would read "-5" as 5.
            let next_is_symbol = bytes.get(i + 1).is_some_and(|&n| values[usize::from(n)] < HYPHEN);
            if symbols == 0 || !next_is_symbol {
                return Err(bad_character(text, i, form));
            }
            continue;
        }
        if v == BAD {
            return Err(bad_character(text, i, form));
        }
        symbols += 1;
        match value.checked_mul(radix).and_then(|x| x.checked_add(i64::from(v))) {
            Some(x) => value = x,
            None => overflow = true,
        }
    }
    // Every character is checked before the length: a stray character is
    // the more useful thing to name.
    if symbols == 0 {
        return Err(TextError::Empty { form });
    }
    if symbols > form.width() {
        return Err(TextError::TooLong { form, symbols });
    }
    if overflow {
        return Err(TextError::OutOfRange { form });
    }
    Ok(value)
}

/// The error for the byte at `index`, which starts a character: every
/// byte before it was an ASCII symbol or hyphen.
fn bad_character(text: &str, index: usize, form: Form) -> TextError {
    let prefix = text.get(..index).unwrap_or("");
    let character = text.get(index..).and_then(|rest| rest.chars().next()).unwrap_or('\u{FFFD}');
    TextError::BadCharacter { form, character, position: prefix.chars().count() + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s62(id: i64) -> String {
        to_base62_string(id).unwrap()
    }
    fn s32(id: i64) -> String {
        to_base32_string(id).unwrap()
    }

    #[test]
    fn the_extremes() {
        assert_eq!(s62(0), "00000000000");
        assert_eq!(s62(61), "0000000000z");
        assert_eq!(s62(62), "00000000010");
        assert_eq!(s62(i64::MAX), "AzL8n0Y58m7");
        assert_eq!(s32(0), "0000000000000");
        assert_eq!(s32(31), "000000000000Z");
        assert_eq!(s32(i64::MAX), "7ZZZZZZZZZZZZ");
        for id in [0, 1, 61, 62, 31, 32, i64::MAX - 1, i64::MAX] {
            assert_eq!(from_base62(&s62(id)), Ok(id));
            assert_eq!(from_base32(&s32(id)), Ok(id));
        }
    }

    #[test]
    fn negative_ids_have_no_text() {
        assert_eq!(to_base62(-1), Err(TextError::Negative { id: -1 }));
        assert_eq!(to_base32(i64::MIN), Err(TextError::Negative { id: i64::MIN }));
    }

    #[test]
    fn shorter_text_is_read_with_leading_zeros() {
        assert_eq!(from_base62("z"), Ok(61));
        assert_eq!(from_base62("10"), Ok(62));
        assert_eq!(from_base32("10"), Ok(32));
        assert_eq!(from_base32("Z"), Ok(31));
    }

    #[test]
    fn crockford_reads_what_a_person_may_type() {
        let id = 0o1234567012345670i64; // any value with many 1s and 0s in base32
        let canonical = s32(id);
        assert_eq!(from_base32(&canonical.to_lowercase()), Ok(id));
        assert_eq!(from_base32("1O"), Ok(32));
        assert_eq!(from_base32("Io"), Ok(32));
        assert_eq!(from_base32("lL"), Ok(33));
        assert_eq!(from_base32("0000-0000-0001F"), Ok(47));
        assert_eq!(from_base32("0-000000000001"), Ok(1));
    }

    #[test]
    fn malformed_text_names_the_character_and_its_position() {
        let bad = |form, character, position| Err(TextError::BadCharacter { form, character, position });
        assert_eq!(from_base32("00U1"), bad(Form::Base32, 'U', 3));
        assert_eq!(from_base32("-5"), bad(Form::Base32, '-', 1));
        assert_eq!(from_base32("5-"), bad(Form::Base32, '-', 2));
        assert_eq!(from_base32("5--6"), bad(Form::Base32, '-', 2));
        assert_eq!(from_base32(" 5"), bad(Form::Base32, ' ', 1));
        assert_eq!(from_base32("5\n"), bad(Form::Base32, '\n', 2));
        assert_eq!(from_base62("ab-c"), bad(Form::Base62, '-', 3));
        assert_eq!(from_base62("ab+c"), bad(Form::Base62, '+', 3));
        // Positions count characters, not bytes.
        assert_eq!(from_base62("ab\u{e9}c"), bad(Form::Base62, '\u{e9}', 3));
        assert_eq!(from_base32("7\u{1F600}"), bad(Form::Base32, '\u{1F600}', 2));
        // A bad character is named even in text that is also too long.
        assert_eq!(from_base62("000000000000000!"), bad(Form::Base62, '!', 16));
    }

    #[test]
    fn empty_long_and_too_large_text_is_refused() {
        assert_eq!(from_base62(""), Err(TextError::Empty { form: Form::Base62 }));
        assert_eq!(from_base32(""), Err(TextError::Empty { form: Form::Base32 }));
        assert_eq!(from_base62("000000000001"), Err(TextError::TooLong { form: Form::Base62, symbols: 12 }));
        assert_eq!(from_base32("00000000000001"), Err(TextError::TooLong { form: Form::Base32, symbols: 14 }));
        assert_eq!(from_base62("AzL8n0Y58m8"), Err(TextError::OutOfRange { form: Form::Base62 }));
        assert_eq!(from_base62("zzzzzzzzzzz"), Err(TextError::OutOfRange { form: Form::Base62 }));
        assert_eq!(from_base32("8000000000000"), Err(TextError::OutOfRange { form: Form::Base32 }));
        assert_eq!(from_base32("ZZZZZZZZZZZZZ"), Err(TextError::OutOfRange { form: Form::Base32 }));
    }

    #[test]
    fn messages_say_what_is_wrong() {
        let e = from_base32("01U").unwrap_err();
        assert_eq!(e.to_string(), "invalid character 'U' at position 3 in Crockford base32 text");
        let e = from_base62("0\u{0}").unwrap_err();
        assert_eq!(e.to_string(), "invalid character '\\0' at position 2 in base62 text");
    }

    /// Text of a base32 string with each 1 and 0 written as a person might.
    fn as_typed(canonical: &str, case: &[bool], hyphens: &[bool]) -> String {
        let mut out = String::new();
        for (i, c) in canonical.chars().enumerate() {
            let pick = case.get(i).copied().unwrap_or(false);
            let c = match (c, pick) {
                ('1', true) => 'l',
                ('1', false) => 'I',
                ('0', true) => 'o',
                ('0', false) => 'O',
                (c, true) => c.to_ascii_lowercase(),
                (c, false) => c,
            };
            out.push(c);
            if i + 1 < canonical.len() && hyphens.get(i).copied().unwrap_or(false) {
                out.push('-');
            }
        }
        out
    }

    proptest! {
        #[test]
        fn both_forms_round_trip_exactly(id in 0..=i64::MAX) {
            prop_assert_eq!(from_base62(&s62(id)), Ok(id));
            prop_assert_eq!(from_base32(&s32(id)), Ok(id));
            prop_assert_eq!(s62(id).len(), 11);
            prop_assert_eq!(s32(id).len(), 13);
        }

        #[test]
        fn small_ids_round_trip_too(id in 0..100_000i64) {
            prop_assert_eq!(from_base62(&s62(id)), Ok(id));
            prop_assert_eq!(from_base32(&s32(id)), Ok(id));
        }

        /// Text order (bytewise, as `COLLATE "C"`) is numeric order.
        #[test]
        fn text_sorts_as_the_numbers(a in 0..=i64::MAX, b in 0..=i64::MAX, near in 0..4096i64) {
            let c = a.saturating_add(near);
            for (x, y) in [(a, b), (a, c), (c, a)] {
                prop_assert_eq!(s62(x).cmp(&s62(y)), x.cmp(&y));
                prop_assert_eq!(s32(x).cmp(&s32(y)), x.cmp(&y));
            }
        }

        #[test]
        fn crockford_reads_any_case_i_l_o_and_hyphens(
            id in 0..=i64::MAX,
            case in proptest::collection::vec(any::<bool>(), 13),
            hyphens in proptest::collection::vec(proptest::bool::weighted(0.2), 13),
        ) {
            let typed = as_typed(&s32(id), &case, &hyphens);
            prop_assert_eq!(from_base32(&typed), Ok(id), "{}", typed);
        }

        /// A character outside the alphabet, put anywhere, is named with its position.
        #[test]
        fn a_stray_character_is_named(id in 0..=i64::MAX, at in 0..=13usize, stray in any::<char>()) {
            let mut base62 = s62(id);
            let at62 = at.min(base62.len());
            base62.insert(at62, stray);
            if !stray.is_ascii_alphanumeric() {
                prop_assert_eq!(
                    from_base62(&base62),
                    Err(TextError::BadCharacter { form: Form::Base62, character: stray, position: at62 + 1 })
                );
            }
            let mut base32 = s32(id);
            base32.insert(at, stray);
            let symbol = stray.is_ascii_alphanumeric() && !matches!(stray, 'u' | 'U');
            if !symbol && stray != '-' {
                prop_assert_eq!(
                    from_base32(&base32),
                    Err(TextError::BadCharacter { form: Form::Base32, character: stray, position: at + 1 })
                );
            }
        }
    }
}
