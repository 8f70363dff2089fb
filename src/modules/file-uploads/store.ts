// SQL of file uploads (metadata only; the bytes are on disk). Every query is filtered by company.
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';
import type { FileUploadRow, FileUploadTables } from './tables.ts';

type UploadsDb = Db;

export class FileUploadsStore {
  readonly db: UploadsDb;
  constructor(db: Db) { this.db = db; }

  byId(companyId: string, id: string): Promise<FileUploadRow | undefined> {
    return this.db.selectFrom('file_uploads').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  list(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<FileUploadRow[]> {
    let qb = this.db.selectFrom('file_uploads').selectAll().where('company_id', '=', companyId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'file_uploads');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insert(row: FileUploadRow): Promise<void> {
    await this.db.insertInto('file_uploads').values(row).execute();
  }
  async delete(companyId: string, id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('file_uploads').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) === 1;
  }
}
