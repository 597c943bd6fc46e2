import { AppError } from '../errors.ts';
import type { UserRepository, UserRow } from '../users/repository.ts';
import { storedAttributes } from '../users/view.ts';
import type { LegalDocuments } from './documents.ts';

/** POST /api/legal/accept: a user (e.g. a first-time social sign-in) accepts the current terms and privacy policy. */
export class LegalService {
  private readonly documents: LegalDocuments;
  private readonly users: UserRepository;

  constructor(documents: LegalDocuments, users: UserRepository) {
    this.documents = documents;
    this.users = users;
  }

  async accept(userId: number, version: string): Promise<UserRow> {
    const current = this.documents.get('terms').version;
    if (version !== current) throw new AppError('TERMS_VERSION_OUTDATED', `The current version of the terms is ${current}`);
    const user = await this.users.findById(userId);
    if (!user) throw new AppError('USER_NOT_FOUND');
    const attributes = { ...storedAttributes(user), ...this.documents.acceptance(new Date()) };
    const updated = await this.users.update(userId, { attributes: JSON.stringify(attributes), updated_at: Date.now() });
    return updated ?? user;
  }
}
