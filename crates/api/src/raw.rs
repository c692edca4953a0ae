use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{DecodeContext, WireType, skip_field};

/// A protobuf message whose encoding is already known: the server writes these bytes as the
/// message body verbatim. Decoding is never needed on the server side (these types only appear
/// in responses), so incoming fields are skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawMessage(pub Bytes);

impl prost::Message for RawMessage {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0 = Bytes::new();
    }
}
