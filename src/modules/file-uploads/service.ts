// File uploads: bytes on disk at <dataDir>/uploads/<company_id>/<id>, a path made only of
// server-generated ids (the client's file name is metadata, never part of a path). On
// PostgreSQL with several instances, <dataDir>/uploads must be a shared volume.
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Actor } from '../access/principal.ts';
import { isAdmin } from '../access/gate.ts';
import { AppError, notFound } from '../../http/errors.ts';
import { nowIso } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';
import type { FileUploadsStore } from './store.ts';
import type { FileUploadRow } from './tables.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface FileUpload {
  id: string;
  filename: string;
  content_type: string;
  size: number;
  sha256: string;
  uploaded_by_user_id: string | null;
  created_at: string;
  updated_at: string;
}

export const UPLOAD_FILTERS: FilterSpec = {
  filename: { column: 'filename', type: 'string' },
  content_type: { column: 'content_type', type: 'string' },
  size: { column: 'size', type: 'number' },
  uploaded_by_user_id: { column: 'uploaded_by_user_id', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

const view = (r: FileUploadRow): FileUpload => ({
  id: r.id, filename: r.filename, content_type: r.content_type, size: r.size, sha256: r.sha256,
  uploaded_by_user_id: r.uploaded_by_user_id, created_at: r.created_at, updated_at: r.updated_at,
});

/** The client's file name reduced to a harmless display name (no directories, no control characters). */
export function cleanFilename(name: string | undefined): string {
  const base = String(name ?? '').split(/[\\/]/).pop() ?? '';
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 255);
  return clean === '' || clean === '.' || clean === '..' ? 'file' : clean;
}

/** A Content-Disposition that cannot be broken out of: ASCII fallback plus RFC 8187 filename*. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())}`;
}

export const fileTooLarge = (max: number) => new AppError(413, 'file_too_large', `The file is larger than the limit of ${max} bytes.`, { extra: { max_bytes: max } });

export class FileUploadsService {
  readonly #store: FileUploadsStore;
  readonly #audit: AuditService;
  readonly #root: string;
  readonly maxBytes: number;

  constructor(store: FileUploadsStore, audit: AuditService, dataDir: string, maxBytes: number) {
    this.#store = store; this.#audit = audit; this.#root = path.join(dataDir, 'uploads'); this.maxBytes = maxBytes;
  }

  /** The file's place on disk: built from ids only, checked to stay below the uploads root. */
  pathOf(companyId: string, id: string): string {
    if (!UUID.test(companyId) || !UUID.test(id)) throw new Error('file upload path from a non-uuid id');
    const p = path.join(this.#root, companyId, id);
    if (!p.startsWith(this.#root + path.sep)) throw new Error('file upload path escapes the uploads directory');
    return p;
  }

  async list(actor: Actor, q: ListQuery): Promise<Page<FileUpload>> {
    return listPage(q, UPLOAD_FILTERS, (p) => this.#store.list(actor.principal.companyId, p.conds, p.cursor, p.limit), view);
  }

  async get(actor: Actor, id: string): Promise<FileUpload> {
    const row = await this.#store.byId(actor.principal.companyId, id);
    if (!row) throw notFound('file upload');
    return view(row);
  }

  /** Streams `stream` to disk; a stream over the limit fails with 413 and leaves nothing behind. */
  async create(actor: Actor, file: { filename: string | undefined; mimetype: string | undefined; stream: Readable }): Promise<FileUpload> {
    const companyId = actor.principal.companyId;
    const id = crypto.randomUUID();
    const final = this.pathOf(companyId, id);
    await fsp.mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
    const temp = path.join(path.dirname(final), `.${id}.part`);
    const hash = crypto.createHash('sha256');
    let size = 0;
    const max = this.maxBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > max) return cb(fileTooLarge(max));
        hash.update(chunk);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(file.stream, meter, fs.createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      if ((file.stream as Readable & { truncated?: boolean }).truncated) throw fileTooLarge(max);
      await fsp.rename(temp, final);
    } catch (err) {
      await fsp.rm(temp, { force: true });
      const e = err as { code?: string; statusCode?: number };
      if (e?.code === 'FST_REQ_FILE_TOO_LARGE' || e?.statusCode === 413) throw fileTooLarge(max);
      throw err;
    }
    const now = nowIso();
    const mimetype = String(file.mimetype ?? '').slice(0, 255);
    const row: FileUploadRow = {
      id, company_id: companyId, uploaded_by_user_id: actor.principal.userId, filename: cleanFilename(file.filename),
      content_type: /^[\w.+-]+\/[\w.+-]+$/.test(mimetype) ? mimetype.toLowerCase() : 'application/octet-stream',
      size, sha256: hash.digest('hex'), created_at: now, updated_at: now,
    };
    try {
      await this.#store.insert(row);
    } catch (err) {
      await fsp.rm(final, { force: true });
      throw err;
    }
    await this.#audit.record(actor, companyId, 'file_upload.created', { type: 'file_upload', id }, { filename: row.filename, size });
    return view(row);
  }

  async open(actor: Actor, id: string): Promise<{ meta: FileUpload; stream: Readable }> {
    const companyId = actor.principal.companyId;
    const row = await this.#store.byId(companyId, id);
    if (!row) throw notFound('file upload');
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(this.pathOf(companyId, id), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new AppError(410, 'file_content_missing', 'The file\'s content is missing from storage (is the uploads volume shared by every instance?).');
      }
      throw err;
    }
    return { meta: view(row), stream: handle.createReadStream() };
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const p = actor.principal;
    const row = await this.#store.byId(p.companyId, id);
    if (!row) throw notFound('file upload');
    if (row.uploaded_by_user_id !== p.userId && !isAdmin(p)) {
      throw new AppError(403, 'forbidden', 'Only the uploader or an admin may delete a file upload.');
    }
    if (!(await this.#store.delete(p.companyId, id))) throw notFound('file upload');
    await fsp.rm(this.pathOf(p.companyId, id), { force: true });
    await this.#audit.record(actor, p.companyId, 'file_upload.deleted', { type: 'file_upload', id }, { filename: row.filename });
  }
}
