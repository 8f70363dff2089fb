// Schema pieces shared by every module's routes (they also feed the OpenAPI document).
import { Type, type TSchema } from 'typebox';

export const Uuid = Type.String({ format: 'uuid', description: 'uuid4' });
export const IdParams = Type.Object({ id: Uuid }, { additionalProperties: false });
export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const Problem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: Type.String({ description: 'Stable machine-readable error code' }),
  request_id: Type.Optional(Type.String()),
  errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
}, { additionalProperties: true, $id: 'Problem' });

/** The error answers every authenticated route may give, for the OpenAPI document. */
export const problemResponses = {
  400: Type.Ref('Problem'), 401: Type.Ref('Problem'), 403: Type.Ref('Problem'), 404: Type.Ref('Problem'),
} as const;

/** Schema annotation: the route accepts a request without a body. */
export const OPTIONAL_BODY = 'x-optional-body';
