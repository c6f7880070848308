// Size-prefixed frames (int32 size, then that many bytes) out of a byte stream's chunks. The
// chunks are kept as a list with their total length and concatenated once, when a frame is
// whole: a 100 MB request arriving in 64 KiB chunks costs one copy, not one per chunk.
import { DecodeError } from "../../libs/common/decode-error.js";

const SIZE_BYTES = 4;

export class FrameAssembler {
  private chunks: Buffer[] = [];
  private total = 0;

  /**
   * sizeBound: the largest frame accepted now (asked again for every frame: it may tighten or
   * widen, e.g. with SASL authentication); sizeMin: the smallest.
   */
  constructor(
    private readonly sizeBound: () => number,
    private readonly sizeMin = 0,
  ) {}

  /** Bytes received and not yet handed out as frames. */
  get bufferedBytes(): number {
    return this.total;
  }

  push(chunk: Buffer): void {
    if (chunk.byteLength === 0) return;
    this.chunks.push(chunk);
    this.total += chunk.byteLength;
  }

  /**
   * The next whole frame's bytes (without the size), or undefined until it has arrived.
   * DecodeError for a size outside [sizeMin, sizeBound()]: the stream cannot be framed further.
   */
  next(): Buffer | undefined {
    if (this.total < SIZE_BYTES) return undefined;
    const size = this.peekSize();
    const max = this.sizeBound();
    if (size < this.sizeMin || size > max)
      throw new DecodeError("kafka", `frame of ${size} bytes (accepted: ${this.sizeMin}..${max})`);
    const end = SIZE_BYTES + size;
    if (this.total < end) return undefined;
    const first = this.chunks[0]!;
    let whole: Buffer;
    if (first.byteLength >= end) {
      whole = first;
    } else {
      // Join just the chunks that cover this frame, once.
      let n = 0;
      let covered = 0;
      while (covered < end) covered += this.chunks[n++]!.byteLength;
      whole = Buffer.concat(this.chunks.slice(0, n), covered);
      this.chunks.splice(0, n, whole);
    }
    const frame = whole.subarray(SIZE_BYTES, end);
    if (whole.byteLength === end) this.chunks.shift();
    else this.chunks[0] = whole.subarray(end);
    this.total -= end;
    return frame;
  }

  /** The int32 size prefix, which may straddle chunks. */
  private peekSize(): number {
    const first = this.chunks[0]!;
    if (first.byteLength >= SIZE_BYTES) return first.readInt32BE(0);
    const head = Buffer.alloc(SIZE_BYTES);
    let at = 0;
    for (const c of this.chunks) {
      at += c.copy(head, at, 0, Math.min(c.byteLength, SIZE_BYTES - at));
      if (at === SIZE_BYTES) break;
    }
    return head.readInt32BE(0);
  }
}
