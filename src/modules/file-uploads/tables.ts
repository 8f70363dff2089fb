// Uploaded files: metadata in the database, bytes on disk under <dataDir>/uploads/<company>/<id>
// (created by migration 0004_flows). The path on disk is derived from ids, never from input.
export interface FileUploadRow {
  id: string;
  company_id: string;
  uploaded_by_user_id: string | null;
  /** The client's file name, for display and Content-Disposition only. */
  filename: string;
  /** The client's declared media type (downloads are always sent as application/octet-stream). */
  content_type: string;
  size: number;
  sha256: string;
  created_at: string;
  updated_at: string;
}

export interface FileUploadTables {
  file_uploads: FileUploadRow;
}
