//! How each value of a native message travels (PROTOCOL.md, "Types"): one `Field` impl per
//! wire type, written once and read once here. Messages and the structs inside them declare
//! their fields in order (`wire_struct!`, and the message tables in `messages.rs`); the
//! encoders and decoders are those declarations, so a field can never be written in one
//! order and read in another.

use bytes::Bytes;

use super::frame::FrameBuilder;
use super::wire::{WireError, WireReader, WireWriter};
use super::ErrorCode;
use crate::io::chain::ByteChain;

/// Where fields are written: a plain buffer (requests) or a frame whose records stay the
/// slices they are (responses).
pub trait Sink {
    fn w(&mut self) -> &mut WireWriter;
    /// A records field: int32 length, then the bytes.
    fn records(&mut self, records: &ByteChain);
}

impl Sink for WireWriter {
    fn w(&mut self) -> &mut WireWriter {
        self
    }

    fn records(&mut self, records: &ByteChain) {
        assert!(
            records.len() <= i32::MAX as usize,
            "{} bytes of records",
            records.len()
        );
        let start = self.buf.len();
        self.i32(records.len() as i32);
        for part in records.parts() {
            self.buf.extend_from_slice(part);
        }
        assert_eq!(
            self.buf.len() - start,
            4 + records.len(),
            "the length says the bytes"
        );
    }
}

impl Sink for FrameBuilder {
    fn w(&mut self) -> &mut WireWriter {
        &mut self.w
    }

    fn records(&mut self, records: &ByteChain) {
        FrameBuilder::records(self, records)
    }
}

/// A value with a wire encoding.
pub trait Field: Sized {
    /// The fewest bytes an encoded value takes: an array's count is bounded by the bytes
    /// left divided by this, so a lying count never makes the reader allocate.
    const MIN_BYTES: usize;
    fn put<S: Sink>(&self, s: &mut S);
    /// Reads a value; `what` names it in the error when the bytes are wrong.
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError>;
    /// Payload bytes beyond the fixed part (records), to size a buffer once.
    fn payload(&self) -> usize {
        0
    }
}

impl Field for bool {
    const MIN_BYTES: usize = 1;
    fn put<S: Sink>(&self, s: &mut S) {
        s.w().i8(*self as i8);
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        Ok(r.i8(what)? != 0)
    }
}

macro_rules! integer_field {
    ($($t:ty => $method:ident, $bytes:literal;)*) => {$(
        impl Field for $t {
            const MIN_BYTES: usize = $bytes;
            fn put<S: Sink>(&self, s: &mut S) {
                s.w().$method(*self);
            }
            fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
                r.$method(what)
            }
        }
    )*};
}

integer_field! {
    i16 => i16, 2;
    i32 => i32, 4;
    i64 => i64, 8;
}

impl Field for String {
    const MIN_BYTES: usize = 2;
    fn put<S: Sink>(&self, s: &mut S) {
        s.w().string(self);
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        r.string(what)
    }
}

impl Field for Bytes {
    const MIN_BYTES: usize = 4;
    fn put<S: Sink>(&self, s: &mut S) {
        s.w().bytes(self);
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        r.bytes(what)
    }
    fn payload(&self) -> usize {
        self.len()
    }
}

/// Records: written as the slices they are when the sink allows.
impl Field for ByteChain {
    const MIN_BYTES: usize = 4;
    fn put<S: Sink>(&self, s: &mut S) {
        s.records(self);
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        Ok(r.bytes(what)?.into())
    }
    fn payload(&self) -> usize {
        self.len()
    }
}

/// A code unknown to this build reads as `Internal`.
impl Field for ErrorCode {
    const MIN_BYTES: usize = 2;
    fn put<S: Sink>(&self, s: &mut S) {
        s.w().i16(*self as i16);
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        Ok(ErrorCode::from_i16(r.i16(what)?).unwrap_or(ErrorCode::Internal))
    }
}

/// A partition's outcome: code 0 and a null message for success, else the code and why.
impl Field for Option<(ErrorCode, String)> {
    const MIN_BYTES: usize = 4;
    fn put<S: Sink>(&self, s: &mut S) {
        match self {
            None => s.w().i16(0).nullable_string(None),
            Some((code, msg)) => s.w().i16(*code as i16).nullable_string(Some(msg)),
        };
    }
    fn get(r: &mut WireReader<'_>, _what: &'static str) -> Result<Self, WireError> {
        let code = r.i16("error_code")?;
        let msg = r.nullable_string("error_message")?;
        Ok((code != 0).then(|| {
            let code = ErrorCode::from_i16(code).unwrap_or(ErrorCode::Internal);
            (code, msg.unwrap_or_default())
        }))
    }
}

/// An array: int32 count, then the elements (a null array reads as empty).
impl<T: Field> Field for Vec<T> {
    const MIN_BYTES: usize = 4;
    fn put<S: Sink>(&self, s: &mut S) {
        assert!(
            self.len() <= i32::MAX as usize,
            "an array of {} elements",
            self.len()
        );
        s.w().i32(self.len() as i32);
        for item in self {
            item.put(s);
        }
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        Ok(Option::<Vec<T>>::get(r, what)?.unwrap_or_default())
    }
    fn payload(&self) -> usize {
        self.iter().map(Field::payload).sum()
    }
}

/// A nullable array: count -1 is null (for example "every topic").
impl<T: Field> Field for Option<Vec<T>> {
    const MIN_BYTES: usize = 4;
    fn put<S: Sink>(&self, s: &mut S) {
        match self {
            None => {
                s.w().i32(-1);
            }
            Some(items) => items.put(s),
        }
    }
    fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
        let Some(n) = r.count(what, T::MIN_BYTES)? else {
            return Ok(None);
        };
        let items = (0..n)
            .map(|_| T::get(r, what))
            .collect::<Result<Vec<T>, _>>()?;
        assert_eq!(items.len(), n);
        Ok(Some(items))
    }
}

macro_rules! tuple_field {
    ($($name:ident)+) => {
        impl<$($name: Field),+> Field for ($($name,)+) {
            const MIN_BYTES: usize = 0 $(+ $name::MIN_BYTES)+;
            #[allow(non_snake_case)]
            fn put<S: Sink>(&self, s: &mut S) {
                let ($($name,)+) = self;
                $($name.put(s);)+
            }
            fn get(r: &mut WireReader<'_>, what: &'static str) -> Result<Self, WireError> {
                Ok(($($name::get(r, what)?,)+))
            }
            #[allow(non_snake_case)]
            fn payload(&self) -> usize {
                let ($($name,)+) = self;
                0 $(+ $name.payload())+
            }
        }
    };
}

tuple_field!(A B);
tuple_field!(A B C);
tuple_field!(A B C D);

/// Declares a struct of the protocol once: its fields, in wire order, each with the name
/// its decode errors give; the `Field` impl is generated from that declaration.
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty = $label:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty ),*
        }

        impl $crate::protocol::field::Field for $name {
            const MIN_BYTES: usize =
                0 $(+ <$ty as $crate::protocol::field::Field>::MIN_BYTES)*;
            fn put<S: $crate::protocol::field::Sink>(&self, s: &mut S) {
                $( $crate::protocol::field::Field::put(&self.$field, s); )*
            }
            fn get(
                r: &mut $crate::protocol::wire::WireReader<'_>,
                _what: &'static str,
            ) -> Result<Self, $crate::protocol::wire::WireError> {
                Ok($name {
                    $( $field: $crate::protocol::field::Field::get(r, $label)? ),*
                })
            }
            fn payload(&self) -> usize {
                0 $(+ $crate::protocol::field::Field::payload(&self.$field))*
            }
        }
    };
}

pub(crate) use wire_struct;

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Field + PartialEq + std::fmt::Debug>(value: T) {
        let mut w = WireWriter::new();
        value.put(&mut w);
        assert!(w.buf.len() >= T::MIN_BYTES, "{value:?}");
        let mut r = WireReader::new(&w.buf);
        assert_eq!(T::get(&mut r, "value").unwrap(), value);
        r.finish().unwrap();
    }

    #[test]
    fn every_field_type_round_trips() {
        round_trip(true);
        round_trip(-7i16);
        round_trip(i64::MIN);
        round_trip(String::from("héllo"));
        round_trip(Bytes::from_static(b"abc"));
        round_trip(ErrorCode::UnknownTopic);
        round_trip(Some((ErrorCode::NotReady, "later".to_string())));
        round_trip(None::<(ErrorCode, String)>);
        round_trip(vec![(String::from("k"), String::from("v"))]);
        round_trip(None::<Vec<String>>);
        round_trip(Some(vec![String::new()]));
    }

    #[test]
    fn a_lying_count_is_refused_before_anything_is_allocated() {
        let mut w = WireWriter::new();
        w.i32(1_000_000);
        let mut r = WireReader::new(&w.buf);
        assert!(Vec::<(String, i64)>::get(&mut r, "pairs").is_err());
    }
}
