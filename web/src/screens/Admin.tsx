import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import type { User } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { dateTime, t } from '../i18n.ts';
import { ErrorNote, Field, Loading, Note, Page } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

const PAGE_SIZE = 20;

export default function Admin({ user }: { user: User }) {
  if (!user.administrator) {
    return (
      <Page title={t.admin.title}>
        <Note>{t.notFound.body}</Note>
      </Page>
    );
  }
  return (
    <Page title={t.admin.title} wide>
      <Users me={user} />
      <ClaimTokens />
    </Page>
  );
}

function Users({ me }: { me: User }) {
  const queryClient = useQueryClient();
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const users = useQuery({ queryKey: queryKeys.admin.usersPage(search, page), queryFn: () => api.listUsers({ search: search.trim() || undefined, page, limit: PAGE_SIZE }) });
  const update = useMutation({
    mutationFn: ({ id, changes }: { id: number; changes: Parameters<typeof api.updateUser>[1] }) => api.updateUser(id, changes),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.admin.users }),
  });
  const pages = users.data ? Math.max(1, Math.ceil(users.data.total / PAGE_SIZE)) : 1;
  return (
    <section className="card" aria-labelledby="admin-users">
      <h2 id="admin-users">{t.admin.users}</h2>
      <Field label={t.admin.search} type="search" value={search} onChange={(e) => { setSearch(e.target.value); setPage(1); }} />
      {users.isPending && <Loading />}
      <ErrorNote error={users.error ?? update.error} onRetry={() => void users.refetch()} />
      {users.data?.users.length === 0 && <p>{t.admin.noUsers}</p>}
      {users.data && users.data.users.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">{t.fields.email}</th>
              <th scope="col">{t.fields.name}</th>
              <th scope="col">{t.admin.administrator}</th>
              <th scope="col">{t.admin.disabled}</th>
            </tr>
          </thead>
          <tbody>
            {users.data.users.map((row) => (
              <tr key={row.id}>
                <td>{row.email}</td>
                <td>{row.name ?? ''}</td>
                <td>
                  <button type="button" className="link" disabled={row.id === me.id} onClick={() => update.mutate({ id: row.id, changes: { administrator: !row.administrator } })}>
                    {row.administrator ? t.admin.removeAdmin : t.admin.makeAdmin}
                  </button>
                </td>
                <td>
                  <button type="button" className="link" disabled={row.id === me.id} onClick={() => update.mutate({ id: row.id, changes: { disabled: !row.disabled } })}>
                    {row.disabled ? t.admin.enable : t.admin.disable}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className="row">
        <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
          {t.admin.previous}
        </button>
        <span>{t.admin.page(page, pages)}</span>
        <button type="button" disabled={page >= pages} onClick={() => setPage(page + 1)}>
          {t.admin.next}
        </button>
      </div>
    </section>
  );
}

function ClaimTokens() {
  const queryClient = useQueryClient();
  const tokens = useQuery({ queryKey: queryKeys.admin.claimTokens, queryFn: () => api.claimTokens({ limit: 100 }) });
  const [modelCode, setModelCode] = useState('');
  const [modelName, setModelName] = useState('');
  const [uniqueId, setUniqueId] = useState('');
  const create = useMutation({
    mutationFn: () => api.createClaimToken({ modelCode: modelCode.trim(), modelName: modelName.trim() || null, uniqueId: uniqueId.trim() || null }),
    onSuccess: () => {
      setUniqueId('');
      void queryClient.invalidateQueries({ queryKey: queryKeys.admin.claimTokens });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <section className="card" aria-labelledby="admin-tokens">
      <h2 id="admin-tokens">{t.admin.claimTokens}</h2>
      <form onSubmit={submit} className="row wrap">
        <Field label={t.admin.modelCode} required maxLength={64} value={modelCode} onChange={(e) => setModelCode(e.target.value)} />
        <Field label={t.admin.modelName} maxLength={128} value={modelName} onChange={(e) => setModelName(e.target.value)} />
        <Field label={t.admin.uniqueId} maxLength={128} value={uniqueId} onChange={(e) => setUniqueId(e.target.value)} />
        <button type="submit" className="primary" disabled={create.isPending}>
          {t.admin.createToken}
        </button>
      </form>
      <ErrorNote error={create.error} />
      {tokens.isPending && <Loading />}
      <ErrorNote error={tokens.error} onRetry={() => void tokens.refetch()} />
      {tokens.data?.length === 0 && <p>{t.admin.noTokens}</p>}
      {tokens.data && tokens.data.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">{t.admin.token}</th>
              <th scope="col">{t.claim.model}</th>
              <th scope="col">{t.claim.uniqueId}</th>
              <th scope="col">{t.admin.status}</th>
            </tr>
          </thead>
          <tbody>
            {tokens.data.map((token) => (
              <tr key={token.token}>
                <td>
                  <code>{token.token}</code>
                </td>
                <td>{token.model}</td>
                <td>{token.uniqueId ?? ''}</td>
                <td>
                  {t.admin.tokenStatus[token.status] ?? token.status}
                  {token.claimedAt && <small> · {dateTime(token.claimedAt)}</small>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
