/**
 * Ad-hoc code signature for a 64-bit Mach-O executable, written on any platform.
 *
 * macOS on Apple silicon runs only signed code. The official Node binary carries Node's Developer
 * ID signature, which `node --build-sea` removes when it adds the application's segment; the
 * result must be signed again. An ad-hoc signature is the one `codesign --sign -` makes: no
 * certificate, only a CodeDirectory holding the SHA-256 of every 4 KiB page of the file up to the
 * signature, which the kernel checks page by page as it maps them.
 *
 * What this writes (Apple's published format, all fields big-endian), at the end of __LINKEDIT:
 *   SuperBlob (0xfade0cc0) indexing three blobs:
 *     CodeDirectory (0xfade0c02, version 0x20400, flags adhoc, SHA-256, pages of 4096 bytes,
 *       the identifier, special slots -1 (no Info.plist: zeros) and -2 (the requirements' hash),
 *       the exec segment (__TEXT) of a main executable);
 *     Requirements (0xfade0c01), an empty set;
 *     an empty CMS wrapper (0xfade0b01), as codesign writes for ad-hoc signatures.
 * The header is changed first (LC_CODE_SIGNATURE added or reused, __LINKEDIT grown to cover the
 * signature), then the pages are hashed, so the hashes cover the final header.
 *
 * No hardened runtime flag: with it, Node's JIT would need entitlements, and an ad-hoc
 * signature has no use for them.
 */
import { createHash } from "node:crypto";

const MH_MAGIC_64 = 0xfeedfacf;
const MH_EXECUTE = 0x2;
const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;
const HEADER_SIZE = 32;
const SEGMENT_SIZE = 72;
const SECTION_SIZE = 80;

const SUPERBLOB_MAGIC = 0xfade0cc0;
const CODEDIRECTORY_MAGIC = 0xfade0c02;
const REQUIREMENTS_MAGIC = 0xfade0c01;
const BLOBWRAPPER_MAGIC = 0xfade0b01;
const SLOT_CODEDIRECTORY = 0;
const SLOT_REQUIREMENTS = 2;
const SLOT_SIGNATURE = 0x10000;
const CD_VERSION = 0x20400;
const CD_HEADER_SIZE = 88;
const CS_ADHOC = 0x2;
const CS_EXECSEG_MAIN_BINARY = 0x1;
const HASH_SHA256 = 2;
const HASH_SIZE = 32;
const PAGE_SHIFT = 12;
const PAGE_SIZE = 1 << PAGE_SHIFT;
const SPECIAL_SLOTS = 2;
/** Segments grow in whole VM pages; 16 KiB is a page on arm64 and four on x86_64. */
const VM_PAGE = 0x4000;

interface Segment {
  /** Offset of the load command in the file. */
  command: number;
  name: string;
  fileoff: number;
  filesize: number;
  /** Lowest file offset of a section with file contents (Infinity when none). */
  firstSectionOffset: number;
}

interface Layout {
  ncmds: number;
  sizeofcmds: number;
  filetype: number;
  segments: Segment[];
  /** Offset of an existing LC_CODE_SIGNATURE command, and its data offset. */
  signature: { command: number; dataoff: number } | null;
}

export interface SignResult {
  /** The signed file's bytes. */
  bytes: Buffer;
  /** Bytes hashed (the signature's offset in the file). */
  codeLimit: number;
  pages: number;
}

/** Signs `input` (a thin 64-bit Mach-O executable) ad hoc with `identifier`. */
export function signMachO(input: Uint8Array, identifier: string): SignResult {
  const layout = readLayout(input);
  const linkedit = layout.segments.find((s) => s.name === "__LINKEDIT");
  const text = layout.segments.find((s) => s.name === "__TEXT");
  if (!linkedit || !text) throw new Error("Mach-O signing: no __TEXT or __LINKEDIT segment");
  const linkeditEnd = linkedit.fileoff + linkedit.filesize;
  // Everything after the old signature (or the end of __LINKEDIT) is dropped and re-made.
  const dataEnd = layout.signature ? layout.signature.dataoff : linkeditEnd;
  if (!layout.signature && linkeditEnd !== input.length) {
    throw new Error(
      `Mach-O signing: ${input.length - linkeditEnd} bytes follow __LINKEDIT; refusing to guess`,
    );
  }
  if (layout.segments.some((s) => s !== linkedit && s.fileoff + s.filesize > linkedit.fileoff)) {
    throw new Error("Mach-O signing: __LINKEDIT is not the last segment in the file");
  }
  const codeLimit = align(dataEnd, 16);
  const idBytes = Buffer.from(`${identifier}\0`, "utf8");
  const pages = Math.ceil(codeLimit / PAGE_SIZE);
  const cdLength = CD_HEADER_SIZE + idBytes.length + (SPECIAL_SLOTS + pages) * HASH_SIZE;
  const requirements = requirementsBlob();
  const wrapper = blobHeader(BLOBWRAPPER_MAGIC, 8);
  const indexLength = 12 + 3 * 8;
  const signatureLength = align(
    indexLength + cdLength + requirements.length + wrapper.length,
    16,
  );

  const out = Buffer.alloc(codeLimit + signatureLength);
  out.set(input.subarray(0, Math.min(dataEnd, input.length)));
  let commandAt = layout.signature?.command;
  if (commandAt === undefined) {
    commandAt = HEADER_SIZE + layout.sizeofcmds;
    const room = Math.min(...layout.segments.map((s) => s.firstSectionOffset)) - commandAt;
    if (room < 16 || out.subarray(commandAt, commandAt + 16).some((b) => b !== 0)) {
      throw new Error("Mach-O signing: no room after the load commands for LC_CODE_SIGNATURE");
    }
    out.writeUInt32LE(layout.ncmds + 1, 16);
    out.writeUInt32LE(layout.sizeofcmds + 16, 20);
  }
  out.writeUInt32LE(LC_CODE_SIGNATURE, commandAt);
  out.writeUInt32LE(16, commandAt + 4);
  out.writeUInt32LE(codeLimit, commandAt + 8);
  out.writeUInt32LE(signatureLength, commandAt + 12);
  // __LINKEDIT now ends where the signature ends.
  const filesize = codeLimit + signatureLength - linkedit.fileoff;
  const vmsize = Number(out.readBigUInt64LE(linkedit.command + 32));
  out.writeBigUInt64LE(BigInt(filesize), linkedit.command + 48);
  out.writeBigUInt64LE(BigInt(Math.max(vmsize, align(filesize, VM_PAGE))), linkedit.command + 32);

  const cd = Buffer.alloc(cdLength);
  const hashOffset = CD_HEADER_SIZE + idBytes.length + SPECIAL_SLOTS * HASH_SIZE;
  cd.writeUInt32BE(CODEDIRECTORY_MAGIC, 0);
  cd.writeUInt32BE(cdLength, 4);
  cd.writeUInt32BE(CD_VERSION, 8);
  cd.writeUInt32BE(CS_ADHOC, 12);
  cd.writeUInt32BE(hashOffset, 16);
  cd.writeUInt32BE(CD_HEADER_SIZE, 20); // identOffset
  cd.writeUInt32BE(SPECIAL_SLOTS, 24);
  cd.writeUInt32BE(pages, 28);
  cd.writeUInt32BE(codeLimit, 32);
  cd.writeUInt8(HASH_SIZE, 36);
  cd.writeUInt8(HASH_SHA256, 37);
  cd.writeUInt8(0, 38); // platform
  cd.writeUInt8(PAGE_SHIFT, 39);
  // spare2, scatterOffset, teamOffset, spare3, codeLimit64 stay zero.
  cd.writeBigUInt64BE(BigInt(text.fileoff), 64); // execSegBase
  cd.writeBigUInt64BE(BigInt(text.filesize), 72); // execSegLimit
  cd.writeBigUInt64BE(
    BigInt(layout.filetype === MH_EXECUTE ? CS_EXECSEG_MAIN_BINARY : 0),
    80,
  );
  cd.set(idBytes, CD_HEADER_SIZE);
  // Special slot -1 (Info.plist) stays zero; slot -2 is the requirements' hash.
  cd.set(sha256(requirements), hashOffset - SLOT_REQUIREMENTS * HASH_SIZE);
  for (let page = 0; page < pages; page += 1) {
    const start = page * PAGE_SIZE;
    const hash = sha256(out.subarray(start, Math.min(start + PAGE_SIZE, codeLimit)));
    cd.set(hash, hashOffset + page * HASH_SIZE);
  }

  const superBlob = Buffer.alloc(signatureLength);
  superBlob.writeUInt32BE(SUPERBLOB_MAGIC, 0);
  superBlob.writeUInt32BE(signatureLength, 4);
  superBlob.writeUInt32BE(3, 8);
  let offset = indexLength;
  const blobs: [number, Buffer][] = [
    [SLOT_CODEDIRECTORY, cd],
    [SLOT_REQUIREMENTS, requirements],
    [SLOT_SIGNATURE, wrapper],
  ];
  blobs.forEach(([slot, blob], i) => {
    superBlob.writeUInt32BE(slot, 12 + i * 8);
    superBlob.writeUInt32BE(offset, 16 + i * 8);
    superBlob.set(blob, offset);
    offset += blob.length;
  });
  out.set(superBlob, codeLimit);
  return { bytes: out, codeLimit, pages };
}

function readLayout(file: Uint8Array): Layout {
  const b = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (b.length < HEADER_SIZE || b.readUInt32LE(0) !== MH_MAGIC_64) {
    throw new Error("Mach-O signing: not a thin 64-bit little-endian Mach-O file");
  }
  const filetype = b.readUInt32LE(12);
  const ncmds = b.readUInt32LE(16);
  const sizeofcmds = b.readUInt32LE(20);
  const segments: Segment[] = [];
  let signature: Layout["signature"] = null;
  let at = HEADER_SIZE;
  for (let i = 0; i < ncmds; i += 1) {
    const cmd = b.readUInt32LE(at);
    const cmdsize = b.readUInt32LE(at + 4);
    if (cmdsize < 8 || at + cmdsize > HEADER_SIZE + sizeofcmds) {
      throw new Error(`Mach-O signing: load command ${i} has a bad size`);
    }
    if (cmd === LC_SEGMENT_64) segments.push(readSegment(b, at));
    if (cmd === LC_CODE_SIGNATURE) signature = { command: at, dataoff: b.readUInt32LE(at + 8) };
    at += cmdsize;
  }
  return { ncmds, sizeofcmds, filetype, segments, signature };
}

function readSegment(b: Buffer, at: number): Segment {
  const name = b.subarray(at + 8, at + 24).toString("latin1").replace(/\0+$/, "");
  const nsects = b.readUInt32LE(at + 64);
  let firstSectionOffset = Infinity;
  for (let s = 0; s < nsects; s += 1) {
    const section = at + SEGMENT_SIZE + s * SECTION_SIZE;
    const offset = b.readUInt32LE(section + 48);
    const size = Number(b.readBigUInt64LE(section + 40));
    // Zero-fill sections (offset 0) take no room in the file.
    if (offset > 0 && size > 0) firstSectionOffset = Math.min(firstSectionOffset, offset);
  }
  return {
    command: at,
    name,
    fileoff: Number(b.readBigUInt64LE(at + 40)),
    filesize: Number(b.readBigUInt64LE(at + 48)),
    firstSectionOffset,
  };
}

function requirementsBlob(): Buffer {
  const blob = blobHeader(REQUIREMENTS_MAGIC, 12);
  blob.writeUInt32BE(0, 8); // no requirements
  return blob;
}

function blobHeader(magic: number, length: number): Buffer {
  const blob = Buffer.alloc(length);
  blob.writeUInt32BE(magic, 0);
  blob.writeUInt32BE(length, 4);
  return blob;
}

function sha256(data: Uint8Array): Buffer {
  return createHash("sha256").update(data).digest();
}

function align(value: number, to: number): number {
  return Math.ceil(value / to) * to;
}
