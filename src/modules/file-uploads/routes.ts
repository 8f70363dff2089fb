// Routes of file uploads (entity "File Uploads": scope company; automation reads).
import type { FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { AppError, badRequest } from '../../http/errors.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { IdParams, Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import { contentDisposition, fileTooLarge, type FileUploadsService } from './service.ts';

const FileUploadSchema = Type.Object({
  id: Uuid,
  filename: Type.String(),
  content_type: Type.String({ description: 'As declared by the uploader; downloads are sent as application/octet-stream' }),
  size: Type.Integer(),
  sha256: Type.String(),
  uploaded_by_user_id: Nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: false });

export async function fileUploadRoutes(app: FastifyInstance, service: FileUploadsService): Promise<void> {
  const tags = ['File uploads'];
  const entity = 'File Uploads' as const;
  const max = service.maxBytes;

  // Multipart parsing only in this encapsulated scope: the rest of the API stays JSON-only.
  await app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { fileSize: max, files: 1, fields: 10, fieldSize: 1024, parts: 20, headerPairs: 100 },
      throwFileSizeLimit: true,
    });
    scope.withTypeProvider<TypeBoxTypeProvider>().post('/v1/file-uploads', {
      config: { entity },
      schema: {
        tags, summary: `Upload a file: multipart/form-data with one part named "file" (at most ${max} bytes)`,
        consumes: ['multipart/form-data'],
        response: { 201: FileUploadSchema, ...problemResponses, 413: Type.Ref('Problem'), 415: Type.Ref('Problem') },
      },
    }, async (req, reply) => {
      if (!req.isMultipart()) throw new AppError(415, 'unsupported_media_type', 'Send the file as multipart/form-data with a part named "file".');
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > max + 1024 * 1024) throw fileTooLarge(max);
      let part;
      try {
        part = await req.file();
      } catch (err) {
        const e = err as { code?: string; statusCode?: number };
        if (e?.code === 'FST_REQ_FILE_TOO_LARGE') throw fileTooLarge(max);
        throw badRequest('invalid_multipart', 'The multipart body could not be read.', [{ field: 'file', message: 'is not a readable multipart part' }]);
      }
      if (!part || part.fieldname !== 'file') {
        part?.file.resume();
        throw badRequest('validation_failed', 'Send the file in a part named "file".', [{ field: 'file', message: 'is required' }]);
      }
      const meta = await service.create(actorOf(req), { filename: part.filename, mimetype: part.mimetype, stream: part.file });
      return reply.code(201).header('location', `/v1/file-uploads/${meta.id}`).send(meta);
    });
  });

  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/v1/file-uploads', {
    config: { entity },
    schema: { tags, summary: 'List file uploads (filter: filename, content_type, size, uploaded_by_user_id, created_at)', querystring: ListQuery, response: { 200: pageSchema(FileUploadSchema), ...problemResponses } },
  }, (req) => service.list(actorOf(req), req.query));

  r.get('/v1/file-uploads/:id', {
    config: { entity },
    schema: { tags, summary: 'Metadata of a file upload', params: IdParams, response: { 200: FileUploadSchema, ...problemResponses } },
  }, (req) => service.get(actorOf(req), req.params.id));

  r.get('/v1/file-uploads/:id/content', {
    config: { entity },
    schema: {
      tags, summary: 'Download the file (always application/octet-stream, as an attachment)', params: IdParams,
      produces: ['application/octet-stream'],
      response: { ...problemResponses },
    },
  }, async (req, reply) => {
    const { meta, stream } = await service.open(actorOf(req), req.params.id);
    return reply
      .type('application/octet-stream')
      .header('content-length', String(meta.size))
      .header('content-disposition', contentDisposition(meta.filename))
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'private, no-store')
      .header('content-security-policy', "default-src 'none'; sandbox")
      .send(stream);
  });

  r.delete('/v1/file-uploads/:id', {
    config: { entity },
    schema: { tags, summary: 'Delete a file upload (its uploader or an admin)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await service.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });
}
